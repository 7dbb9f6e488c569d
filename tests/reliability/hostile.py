"""Hostile HTTP requests for every route, sent over a real socket to a real server.

The routes come from the app itself: its OpenAPI document (each JSON body's schema gives a
valid body to start from and the fields to break) and its route table (the pages, whose
forms are posted with the field names the templates use). Every route gets every family
of hostile input at least once — bodies nested deep, wide, huge, holding half a
character, bytes that are not UTF-8, NUL, huge integers, NaN and Infinity, duplicate keys,
wrong types, cut off or not JSON at all; wrong and broken content types and multipart
garbage; path parameters and queries that are huge, negative, past 64 bits, NUL, `..`
and encoded surrogates; two Host headers — and a long run adds seeded random mutations.

Each answer is judged (`judge`): never 5xx, never slower than `SLOW` seconds (times
tests/waiting.py's factor: 1 on a quiet machine), an error answer bounded in size
(`ERROR_BOUND`, JSON; a page that shows an error is bounded by what the page itself is),
and a refused request writes nothing (`tests/reliability/test_fuzz.CommitWatch`). Requests are raw bytes on a
socket (so nothing a client library would tidy away — a NUL in a path, two Host headers —
is lost), each on its own connection.
"""

from __future__ import annotations

import json
import os
import random
import re
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote

import uvicorn

from tests import waiting
from tests.reliability.test_concurrency import minimal

SLOW = 2.0  # seconds: no answer may take longer (times the environment's factor)
ERROR_BOUND = 4096  # bytes of a JSON error answer, whatever the request held
PAGE_BOUND = 256 * 1024  # bytes of a page showing an error (it shows the form again)
TEMPLATES = Path(__file__).parents[2] / "talekeeper" / "web" / "templates"


@dataclass
class Sent:
    method: str
    target: bytes  # the request target as sent: path and query, raw
    body: bytes = b""
    headers: list[tuple[bytes, bytes]] = field(default_factory=list)
    family: str = ""

    def describe(self) -> str:
        body = self.body[:160] + (b"..." if len(self.body) > 160 else b"")
        return f"[{self.family}] {self.method} {self.target[:200]!r} body={body!r} ({len(self.body)} bytes)"


@dataclass
class Answer:
    status: int
    headers: dict[str, str]
    body: bytes
    seconds: float
    cookies: list[str] = field(default_factory=list)  # every Set-Cookie, as sent


class Server:
    """The app served by uvicorn in a thread, on a port of its own."""

    def __init__(self, app: Any) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        config = uvicorn.Config(app, log_level="critical", lifespan="off", timeout_keep_alive=1)
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(
            target=self.server.run, kwargs={"sockets": [self.sock]}, daemon=True
        )

    def __enter__(self) -> Server:
        self.thread.start()
        while not self.server.started:  # ready when uvicorn says so, not after a guess
            if not self.thread.is_alive():
                raise RuntimeError("the server thread ended before it started")
            time.sleep(0.01)
        return self

    def __exit__(self, *exc: Any) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=30 * waiting.factor())
        self.sock.close()


def send(port: int, sent: Sent, host: bytes = b"127.0.0.1:8000", wait: float = 60.0) -> Answer:
    """One request on its own connection; the whole answer, read to its end."""
    head = [sent.method.encode() + b" " + sent.target + b" HTTP/1.1"]
    names = {name.lower() for name, _ in sent.headers}
    if b"host" not in names:
        head.append(b"Host: " + host)
    head += [name + b": " + value for name, value in sent.headers]
    if b"content-length" not in names and b"transfer-encoding" not in names:
        head.append(b"Content-Length: " + str(len(sent.body)).encode())
    head.append(b"Connection: close")
    raw = b"\r\n".join(head) + b"\r\n\r\n" + sent.body
    began = time.perf_counter()
    with socket.create_connection(("127.0.0.1", port), timeout=wait) as conn:
        try:
            conn.sendall(raw)
        except (ConnectionResetError, BrokenPipeError):
            pass  # answered (413, say) and closed before the whole body was read
        chunks = []
        while True:
            try:
                chunk = conn.recv(65536)
            except ConnectionResetError:
                break
            if not chunk:
                break
            chunks.append(chunk)
    seconds = time.perf_counter() - began
    return _parse(b"".join(chunks), seconds)


def _parse(data: bytes, seconds: float) -> Answer:
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.split(b"\r\n")
    try:
        status = int(lines[0].split()[1])
    except (IndexError, ValueError):
        status = 0  # no answer at all: judged as a failure
    headers: dict[str, str] = {}
    cookies = []
    for line in lines[1:]:
        name, _, value = line.partition(b":")
        key, text = name.strip().lower().decode("latin-1"), value.strip().decode("latin-1")
        headers[key] = text
        if key == "set-cookie":
            cookies.append(text)
    if headers.get("transfer-encoding", "").lower() == "chunked":
        body = _unchunk(body)
    return Answer(status, headers, body, seconds, cookies)


def _unchunk(data: bytes) -> bytes:
    out, pos = [], 0
    while True:
        end = data.find(b"\r\n", pos)
        if end < 0:
            return b"".join(out)
        size = int(data[pos:end].split(b";")[0] or b"0", 16)
        if size == 0:
            return b"".join(out)
        out.append(data[end + 2 : end + 2 + size])
        pos = end + 2 + size + 2


def judge(sent: Sent, answer: Answer, wrote: bool) -> str | None:
    """What is wrong with an answer (None: nothing)."""
    limit = SLOW * waiting.factor()
    if answer.status == 0 or answer.status >= 500:
        return f"answered {answer.status}: {answer.body[:300]!r}"
    if answer.seconds > limit:
        return f"took {answer.seconds:.2f} s (limit {limit:.1f} s)"
    if answer.status >= 400:
        kind = answer.headers.get("content-type", "")
        bound = ERROR_BOUND if kind.startswith("application/json") else PAGE_BOUND
        if len(answer.body) > bound:
            return f"an error answer of {len(answer.body):,} bytes (bound {bound:,})"
        if kind.startswith("application/json"):
            try:
                detail = json.loads(answer.body).get("detail")
            except (ValueError, AttributeError):
                return f"an error answer that is not the error body: {answer.body[:200]!r}"
            if not detail:
                return "an error answer without a sentence"
        if wrote:
            return "refused, yet it wrote to the database"
    return None


# --- what to send ----------------------------------------------------------------------


@dataclass(frozen=True)
class Route:
    method: str
    path: str  # with {name} placeholders
    schema: dict[str, Any] | None  # the JSON body's schema, when OpenAPI gives one
    page: bool  # not in the OpenAPI document: a page (its forms are posted)


def routes(app: Any) -> list[Route]:
    """Every route the app answers: OpenAPI operations with their body schemas, and the
    route table's pages."""
    from tests.test_accounts_isolation import all_routes

    spec = app.openapi()
    found = []
    for method, path in all_routes(app):
        operation = spec["paths"].get(path, {}).get(method.lower())
        schema = None
        if operation is not None:
            content = operation.get("requestBody", {}).get("content", {})
            schema = content.get("application/json", {}).get("schema")
        found.append(Route(method, path, schema, operation is None))
    return found


def form_fields() -> list[str]:
    """The form field names the pages' templates use."""
    names = set()
    for template in TEMPLATES.glob("*.html"):
        names.update(re.findall(r'name="([a-z_]+)', template.read_text()))
    return sorted(names | {"answer_name", "csrf_token", "next", "password", "name"})


HUGE_INT = b"9" * 5000
PATH_VALUES = [
    "0",
    "-1",
    "9223372036854775808",
    "18446744073709551616",
    "1" + "0" * 5000,
    "1.5",
    "1e3",
    "x",
    "%00",
    "a%00b",
    "%ED%A0%80",
    "%FF%FE",
    "..%2F..%2Fetc%2Fpasswd",
    "%2e%2e",
    "a" * 3000,
    "%EF%BC%91",  # a fullwidth digit one
    "%20",
    "<script>",
]
QUERIES = [
    "limit=99999999999999999999999&before=-1",
    "limit=" + "9" * 5000,
    "q=%ED%A0%80&q=%00",
    "q=" + "x" * 6000,
    "limit=NaN&before=Infinity",
    "part=%00&next=%2F%2Fevil.example",
    "filename=%00.scenario",
    "a=1&" * 500,
]


class Families:
    """Hostile variants of a request to one route; `ids` fills path parameters with real
    things (a played adventure, its turns, a Save Point, a scenario of one's own)."""

    def __init__(self, app: Any, ids: dict[str, str], rng: random.Random) -> None:
        self.components = app.openapi().get("components", {}).get("schemas", {})
        self.ids = ids
        self.rng = rng
        self.fields = form_fields()
        self.short: int | None = None

    def target(self, route: Route, values: dict[str, str] | None = None) -> bytes:
        path = route.path
        for name in re.findall(r"{(\w+)}", path):
            value = (values or {}).get(name, self.ids.get(name, "1"))
            path = path.replace("{" + name + "}", value)
        return path.encode("utf-8", "surrogateescape")

    def valid(self, route: Route) -> Any:
        return minimal(route.schema, self.components) if route.schema else {}

    def all(self, route: Route, variants: int = 1, short: int | None = None) -> Iterator[Sent]:
        """Every family (and `variants - 1` random mutations of the body). `short`, the
        route's number, sends a rotating share of the costly and repetitive families
        instead (every route still gets every kind of input; each value reaches many
        routes), for a run in the suite."""
        self.short = short
        yield from self.paths(route)
        yield from self.queries(route)
        yield from self.headers(route)
        if route.method in ("GET", "HEAD", "DELETE") and route.schema is None:
            return
        yield from self.bodies(route)
        yield from self.content_types(route)
        if route.page or route.schema is None:
            yield from self.forms(route)
        for _ in range(max(0, variants - 1)):
            yield self.mutation(route)

    def _share(self, items: list[Any], count: int) -> list[Any]:
        """All of `items`, or (short) `count` of them, rotating with the route's number."""
        if self.short is None:
            return items
        start = self.short * count
        return [items[(start + i) % len(items)] for i in range(min(count, len(items)))]

    def _sent(self, route: Route, body: bytes, family: str, kind: bytes | None = None) -> Sent:
        headers = [(b"Content-Type", kind)] if kind is not None else []
        return Sent(route.method, self.target(route), body, headers, family)

    def paths(self, route: Route) -> Iterator[Sent]:
        names = re.findall(r"{(\w+)}", route.path)
        for value in self._share(PATH_VALUES, 3) if names else []:
            name = self.rng.choice(names)
            yield Sent(route.method, self.target(route, {name: value}), family=f"path {name}")
        base = self.target(route)
        tricks = [base + b"/", b"/" + base, base + b"/%2e%2e/%2e%2e", base + b";x=1"]
        for tricked in self._share(tricks, 1):
            yield Sent(route.method, tricked, family="path trick")

    def queries(self, route: Route) -> Iterator[Sent]:
        for query in self._share(self.rng.sample(QUERIES, 3), 1):
            yield Sent(route.method, self.target(route) + b"?" + query.encode(), family="query")

    def headers(self, route: Route) -> Iterator[Sent]:
        target = self.target(route)
        yield Sent(
            route.method, target, headers=[(b"Host", b"127.0.0.1:8000")] * 2, family="two hosts"
        )
        yield Sent(route.method, target, headers=[(b"Host", b"[::1].evil.example")], family="host")
        yield Sent(
            route.method,
            target,
            headers=[
                (b"Accept", b"text/event-stream"),
                (b"Cookie", b"talekeeper_session=\xff\x00"),
            ],
            family="headers",
        )

    def bodies(self, route: Route) -> Iterator[Sent]:
        valid = self.valid(route)
        text = json.dumps(valid).encode()
        key = (
            json.dumps(self.rng.choice(sorted(valid))).encode()
            if isinstance(valid, dict) and valid
            else b'"x"'
        )
        kind = b"application/json"
        shapes = {
            "deep": b"[" * 100_000 + b"]" * 100_000,
            "wide": b"{" + b",".join(b'"k%d": 1' % i for i in range(80_000)) + b"}",
            "huge string": b'{"x": "' + b"x" * 1_500_000 + b'"}',
            "huge array": b"[" + b"0," * 9_999 + b"0]",
            "surrogate escape": _with(text, key, b'"\\ud800"'),
            "surrogate bytes": _with(text, key, b'"\xed\xa0\x80"'),
            "not utf-8": _with(text, key, b'"\xff\xfe"'),
            "nul": _with(text, key, b'"a\\u0000b\x00"'),
            "huge integer": _with(text, key, HUGE_INT),
            "past 64 bits": _with(text, key, b"18446744073709551616"),
            "nan": _with(text, key, b"NaN"),
            "infinity": _with(text, key, b"-Infinity"),
            "tiny float": _with(text, key, b"1e-400"),
            "duplicate keys": text[:-1] + b"," + key + b": [1], " + key + b': "x"}'
            if text.startswith(b"{") and len(text) > 2
            else b'{"a": 1, "a": 2}',
            "wrong type": _with(text, key, self.rng.choice([b"[]", b"{}", b"true", b"null", b"1"])),
            "cut off": text[: max(1, len(text) // 2)],
            "not json": b"hello <script>",
            "empty": b"",
            "bom": b"\xef\xbb\xbf" + text,
            "utf-16": json.dumps(valid).encode("utf-16"),
        }
        costly = ["deep", "wide", "huge string", "huge array", "utf-16"]
        for family in [f for f in shapes if f not in costly] + self._share(costly, 2):
            yield self._sent(route, shapes[family], family, kind)
        yield self._sent(route, text, "valid", kind)

    def content_types(self, route: Route) -> Iterator[Sent]:
        text = json.dumps(self.valid(route)).encode()
        for family, kind, body in self._share([
            ("text/plain", b"text/plain", text),
            ("no type", None, text),
            ("json latin-1", b"application/json; charset=latin-1", b'{"x": "\xe9"}'),
            (
                "form garbage",
                b"application/x-www-form-urlencoded",
                b"%%%&=&a=%ED%A0%80&b=" + HUGE_INT,
            ),
            ("multipart no boundary", b"multipart/form-data", b"--x\r\n\r\n"),
            (
                "multipart garbage",
                b"multipart/form-data; boundary=x",
                b"--x\r\nnonsense\r\n\r\n\x00\xff--x",
            ),
            ("multipart many parts", b"multipart/form-data; boundary=x", _many_parts(3000)),
            (
                "multipart file",
                b"multipart/form-data; boundary=x",
                _file_part(b'{"spec": "\\udfff"}'),
            ),
            ("type garbage", b"\x00/\xff; boundary=" + b"x" * 5000, text),
        ], 3):  # fmt: skip
            yield self._sent(route, body, family, kind)

    def forms(self, route: Route) -> Iterator[Sent]:
        kind = b"application/x-www-form-urlencoded"
        values = [
            HUGE_INT,
            b"%ED%A0%80",
            b"%00",
            b"x" * 200_000,
            b"NaN",
            b"-1",
            b"[" * 10_000 + b"]" * 10_000,
            b"%FF",
            quote(
                json.dumps(
                    {"events": [{"type": "note_event", "text": "\ud800"}]}, ensure_ascii=True
                )
            ).encode(),
        ]
        for value in self._share(values, 2):
            chosen = self.rng.sample(self.fields, min(12, len(self.fields)))
            body = b"&".join(name.encode() + b"=" + value for name in chosen)
            yield self._sent(route, body, f"form {value[:12]!r}", kind)
        if self.short is None or self.short % 3 == 0:
            yield self._sent(
                route,
                b"&".join(name.encode() + b"=" + HUGE_INT for name in self.fields),
                "form every field",
                kind,
            )

    def mutation(self, route: Route) -> Sent:
        """A random mutation of the valid body: a value anywhere replaced by a hostile one."""
        valid = self.valid(route)
        text = json.dumps(valid).encode()
        hostile = self.rng.choice(
            [HUGE_INT, b"NaN", b'"\\ud800"', b'"\xed\xa0\x80"', b'"\x00"', b"[[[[[[", b"1e999",
             b'"' + b"x" * self.rng.randint(0, 100_000) + b'"', b"{}", b"[]", b"null", b"-0",
             b'"\\u0000"', b'"%s"' % os.urandom(8).hex().encode()]
        )  # fmt: skip
        spots = [m.start() for m in re.finditer(rb"[:\[,]\s*", text)] or [0]
        at = self.rng.choice(spots) + 1
        end = re.search(rb"[,\]}]", text[at:])
        body = text[:at] + b" " + hostile + (text[at + end.start() :] if end else b"")
        kind = self.rng.choice([b"application/json", None, b"text/plain"])
        return self._sent(route, body, "mutation", kind)


def _with(text: bytes, key: bytes, value: bytes) -> bytes:
    """The JSON object `text` with `key` set to the raw JSON `value`."""
    if not text.startswith(b"{"):
        return b"{" + key + b": " + value + b"}"
    inner = text[1:-1].strip()
    return b"{" + (inner + b", " if inner else b"") + key + b": " + value + b"}"


def _many_parts(count: int) -> bytes:
    part = b'--x\r\nContent-Disposition: form-data; name="f"\r\n\r\nv\r\n'
    return part * count + b"--x--\r\n"


def _file_part(content: bytes) -> bytes:
    return (
        b'--x\r\nContent-Disposition: form-data; name="file"; filename="\xed\xa0\x80.json"\r\n'
        b"Content-Type: application/json\r\n\r\n" + content + b"\r\n--x--\r\n"
    )
