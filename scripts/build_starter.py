"""Build the starter adventure: a short story already under way, written for talekeeper.

    PYTHONPATH=. .venv/bin/python scripts/build_starter.py [--check]

The story below is written by hand (not by a model). It is played through the real turn
pipeline — a scripted provider answers each turn with the text and the state changes written
here — so its takes, its second line, its Save Point, its change chips and every turn's
Insights are the app's own. The result is exported as an adventure file and shipped in the
package (`talekeeper/starter/`); `interop.starter` opens a copy of it for a newcomer.

`--check` builds it in a throwaway folder and compares it, record by record (times aside),
with the shipped file: after a change to the prompt, the state engine or the bundle format,
rebuild it so that what a newcomer opens is what this code makes (tests/test_starter.py
checks the story itself and that the shipped file opens).
"""

from __future__ import annotations

import argparse
import asyncio
import gzip
import json
import sys
import tempfile
from pathlib import Path

from talekeeper.interop import bundles
from talekeeper.interop.starter import STARTER
from talekeeper.llm.scripted import ScriptedProvider
from talekeeper.service import adventures, tree_ops
from talekeeper.service.app import Talekeeper
from talekeeper.service.turns import play_turn

TITLE = "The Lantern of Greywater — a story to continue"


def told(prose: str, *events: dict) -> str:
    """A reply as a model in inline mode writes it: the prose, then its state block."""
    return prose + (
        "\n```state\n" + json.dumps({"events": list(events)}) + "\n```" if events else ""
    )


# (kind, action, reply) in the order they are played; "retry", "undo" and "save" are moves.
STORY: list[tuple[str, str, str]] = [
    (
        "do",
        "ask the ferrywoman to take me across to the lighthouse",
        told(
            "Maren doesn't stop coiling the rope. She looks you up and down — the patched coat, "
            "the satchel, the hands of someone who works with small screws — and then out at the "
            'grey water heaving over the road to the headland. "Nobody crosses at high water," '
            'she says. "Not for a stranger, and not for a lamp that\'s stood dark all year." But '
            "she is still looking at your tools when she says it.",
            {"type": "change_stat", "stat": "npc.maren.trust", "by": 1},
            {"type": "change_stat", "stat": "world.storm", "by": 1},
        ),
    ),
    (
        "say",
        "The boats are still out. If nobody lights it, they come home blind.",
        told(
            "For a moment the only sound is the rain on the tarred planks. Then Maren throws the "
            'last loop of rope into the ferry and jerks her chin at the bow. "Get in, then, and '
            'keep your weight low," she says. "My brother\'s boat is one of them."',
            {"type": "set_flag", "flag": "ferry_hired", "value": True},
            {"type": "change_stat", "stat": "npc.maren.trust", "by": 3},
            {
                "type": "record_moment",
                "text": "You told Maren the boats would come home blind, and she took you "
                "across for her brother's sake.",
                "weight": 7,
            },
        ),
    ),
    (
        "do",
        "hold the lamp at the bow and call out the rocks",
        told(
            "The ferry bucks across the flooded road like a startled horse. You hold the lamp "
            "high and shout at every pale shape in the water, and twice Maren swings the pole "
            "away from the black fangs of rock just in time. The third time you are too slow: the "
            "hull grinds, the bow kicks, and you go over the side into water so cold it empties "
            "your lungs. Maren hauls you back by the collar and says nothing at all until the "
            "keel scrapes the shingle below the tower.",
            {"type": "change_stat", "stat": "player.health", "by": -3},
            {"type": "set_location", "entity": "player", "location": "lighthouse"},
            {"type": "reach_milestone", "milestone": "reached_headland"},
            {"type": "complete_objective", "thread": "relight", "objective": "cross"},
        ),
    ),
    (
        "retry",
        "",
        told(
            "The ferry bucks across the flooded road, and you learn the rhythm of it: swell, "
            "drop, the long shove of Maren's pole. You hold the lamp high and call out each pale "
            "shape before it reaches you — left, now hard left — and the black rocks slide past "
            "close enough to touch. When the keel grinds on the shingle at last, Maren lets out a "
            'breath she seems to have held since the docks. "You\'ve done that before," she '
            "says. You haven't.",
            {"type": "set_location", "entity": "player", "location": "lighthouse"},
            {"type": "set_scene", "location": "lighthouse", "present": ["maren"]},
            {"type": "reach_milestone", "milestone": "reached_headland"},
            {"type": "complete_objective", "thread": "relight", "objective": "cross"},
            {"type": "change_stat", "stat": "npc.maren.trust", "by": 2},
        ),
    ),
    (
        "do",
        "climb the steps to the lighthouse and try the door",
        told(
            "The steps are cut into the rock and slick with weed, and twice the wind tries to "
            "pluck you off them. At the top the door opens onto a cold stair that smells of salt "
            "and old paraffin, but the trapdoor to the lantern room will not budge: a brass "
            "padlock the size of your fist holds it shut. Through a slit window you can see one "
            "warm light on the whole headland — a cottage in the lee of the hill, its chimney "
            "smoking.",
            {"type": "set_scene", "location": "lighthouse", "present": []},
            {
                "type": "add_fact",
                "object": "the lantern room is padlocked, and its key is not in the tower",
            },
            {"type": "change_stat", "stat": "world.night", "by": -1},  # a counter: refused
        ),
    ),
    ("save", "At the locked trapdoor", "Tobin has the key. Or there are the tools."),
    (
        "do",
        "pick the padlock with my tools",
        told(
            "You kneel on the top step with the lamp between your knees and work at the padlock "
            "with the thinnest pick in your roll. Salt has got into the works; the pick bends, "
            "then snaps, and its broken end stays wedged in the keyway. Below you the sea booms "
            "against the rock, as if it had been waiting for exactly this.",
            {"type": "change_stat", "stat": "player.luck", "by": -1},
            {"type": "add_fact", "object": "a broken pick is wedged in the padlock's keyway"},
        ),
    ),
    ("undo", "", ""),
    (
        "do",
        "go down to the keeper's cottage and knock",
        told(
            "The cottage door opens before your second knock. Tobin is older than his letter "
            "sounded, with a fisherman's shoulders gone thin and a brass key on a cord around his "
            'neck. He looks at your satchel, then past you at the dark tower. "My boy kept that '
            'light," he says. "The sea took him off the rocks in the winter, and I\'ve not had '
            'the heart to climb those stairs since."',
            {"type": "set_location", "entity": "player", "location": "cottage"},
            {"type": "set_scene", "location": "cottage", "present": ["tobin"]},
            {
                "type": "add_fact",
                "subject": "tobin",
                "predicate": "lost his son to",
                "object": "the rocks off the headland last winter",
            },
        ),
    ),
    (
        "say",
        "Then let me climb them for you. Tell me how he did it, and I'll do it the same way.",
        told(
            "Tobin is quiet for so long that you think he will shut the door. Then he lifts the "
            'cord over his head and puts the key in your palm, still warm. "Trim the wick '
            'short," he says. "He always said a long wick smokes the glass, and a smoked glass '
            'is no better than no light at all." He does not come with you, but he leaves the '
            "door open behind you, and the lamp in his window burns a little higher.",
            {"type": "set_possession", "item": "brass_key", "holder": "player"},
            {"type": "reach_milestone", "milestone": "got_key"},
            {"type": "complete_objective", "thread": "relight", "objective": "key"},
            {"type": "change_stat", "stat": "npc.tobin.trust", "by": 3},
            {"type": "set_stat", "stat": "npc.tobin.grief", "value": "easing"},
        ),
    ),
    (
        "do",
        "climb back up, unlock the lantern room and trim the wick short",
        told(
            "The padlock opens with a sound like a knuckle cracking. The lantern room is all glass "
            "and cold brass, the great lens furred with salt, and the wick in the burner has burned "
            "down to a black stub. You trim it short, the way Tobin said, and fill the reservoir "
            "from your last full flask while the wind howls at the panes. Out past the rocks, so "
            "faint you might be imagining it, a single masthead light rises and falls.",
            {"type": "set_location", "entity": "player", "location": "lighthouse"},
            {"type": "set_scene", "location": "lighthouse", "present": []},
            {"type": "set_flag", "flag": "tower_unlocked", "value": True},
            {"type": "change_stat", "stat": "player.lamp_oil", "by": -1},
            {"type": "change_stat", "stat": "world.storm", "by": 1},
        ),
    ),
]


async def _whole(events) -> dict:  # type: ignore[no-untyped-def]
    """Every event of a turn, to its end (its lock is let go only then); the turn as written."""
    turn: dict = {}
    async for event in events:
        if event.kind in ("done", "settled"):
            turn = event.data["turn"]
        elif event.kind == "error":
            raise SystemExit(f"a turn failed: {event.data['message']}")
    return turn


async def _play(tk: Talekeeper, aid: int) -> None:
    for kind, action, reply in STORY:
        if kind == "save":
            tree_ops.create_save_point(tk, aid, action, reply)
        elif kind == "undo":
            tree_ops.undo(tk, aid)
        elif kind == "retry":
            await _whole(tree_ops.retry(tk, aid))
        else:
            stored = (await _whole(play_turn(tk, aid, kind, action)))["narration"]
            written = reply.split("\n```state", 1)[0]
            if stored != written:  # a guard cut or changed it: the story must be as written
                raise SystemExit(
                    f"turn {action!r} was stored differently:\n{stored}\n---\n{written}"
                )


def build(home: Path, out: Path) -> Path:
    """Play the story in a fresh data folder and export it to `out`."""
    replies = [reply for kind, _, reply in STORY if kind in ("do", "say", "retry")]
    tk = Talekeeper(home, provider_override=ScriptedProvider(replies, chunk_size=40))
    with tk.db.session() as session:
        aid = adventures.start_adventure(
            session, "greywater-lantern", {"name": "Wren"}, title=TITLE, origin_id="lamp-mender"
        ).id
    asyncio.run(_play(tk, aid))
    for line in tree_ops.list_lines(tk, aid).lines:
        action = line.last_action_line or ""
        name = "The broken pick" if "pick the padlock" in action else "Tobin's key"
        tree_ops.rename_line(tk, aid, line.id, name)
    out.parent.mkdir(parents=True, exist_ok=True)
    bundles.export_to(tk, aid, out)
    tk.db.dispose()
    return out


def records(path: Path) -> list[dict]:
    """The file's records, less what differs from one build to the next (times)."""
    stamps = {"created_at", "exported_at", "updated_at", "last_played_at", "last_used_at"}

    def clean(value):
        if isinstance(value, dict):
            return {k: clean(v) for k, v in value.items() if k not in stamps and k != "sha256"}
        if isinstance(value, list):
            return [clean(v) for v in value]
        return value

    with gzip.open(path, "rt", encoding="utf-8") as lines:
        return [clean(json.loads(line)) for line in lines]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare with the shipped file")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="talekeeper-starter-") as home:
        out = Path(home) / "starter.jsonl.gz" if args.check else STARTER
        built = build(Path(home) / "data", out)
        if args.check:
            same = records(built) == records(STARTER)
            print("the shipped starter is current" if same else "the shipped starter is stale")
            sys.exit(0 if same else 1)
        print(f"wrote {built}")


if __name__ == "__main__":
    main()
