"""The narration reader: what a narration says about the story's people, places and things.

docs/architecture.md "Reading the narration": narration text + the state document + the
rules → *claims* — who is said to be where, who holds or uses what, who acts or speaks, who
arrives, leaves, sleeps, wakes or dies — each with the sentence it came from and its
mood: asserted now, or only thought, remembered, reported, planned, asked, conditional,
negated or past. Two consumers read the claims: the contradiction guard
(`contradictions.py`) and the change reader (`told.py`).

It is a careful rule-based reader, not a parser: it knows entities only by their names
and aliases in the document (the player also as "you"), English only by `lexicon.py`,
and it favours silence over a wrong claim — an ambiguous name, an unknown verb, a
pronoun that could mean two people, a clause it cannot place, all claim nothing. Words
inside quotation marks are reported speech, never the narration's own assertion; the
speaker of a quote speaks. Pure: no I/O.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache

from . import lexicon as lx
from .document import PLAYER_ID, Document
from .rules import Rules

MOODS = (
    "asserted",
    "thought",
    "remembered",
    "reported",
    "planned",
    "asked",
    "conditional",
    "negated",
    "past",
)
KINDS = (
    "acts",  # someone does something (act: speak | move | use | act | rest), somewhere
    "at",  # someone is at a place
    "moves",  # someone goes to a place (the player's move; an NPC's arrival or departure)
    "arrives",  # someone comes into the scene
    "leaves",  # someone leaves the scene (object: where to, if named)
    "uses",  # someone holds or uses an item
    "gives",  # someone hands an item to someone (other)
    "takes",  # someone takes an item (other: from whom, if named)
    "drops",  # someone puts an item down
    "status",  # someone falls asleep, wakes, dies (object: asleep | awake | dead)
)

PERSON_TYPES = frozenset(
    "person people character npc creature animal beast companion player human".split()
)
PLACE_TYPES = frozenset(
    "place location room area building region town city village site landmark".split()
)
ITEM_TYPES = frozenset("item thing object weapon tool artifact artefact gear".split())


@dataclass(frozen=True)
class Claim:
    """One thing the narration says. `subject`, `object` and `other` are entity ids."""

    kind: str
    subject: str
    object: str | None = None
    other: str | None = None
    mood: str = "asserted"
    verb: str = ""
    act: str = ""
    where: str | None = None
    """For `acts`: "here", a place id, or None when the clause places nobody."""
    sentence: str = ""
    index: int = 0

    @property
    def asserted(self) -> bool:
        return self.mood == "asserted"


# --- the gazetteer: every name the document knows, as one pattern --------------------


@dataclass(frozen=True)
class Gazetteer:
    pattern: re.Pattern[str] | None
    forms: dict[str, tuple[str, ...]]
    proper: frozenset[str]
    heads: frozenset[str]
    kinds: dict[str, str]


_DETS = "the|a|an|your|his|her|their|its|this|that|my|our"
_ARTICLE = re.compile(r"^(?:the|a|an)\s+", re.IGNORECASE)


def _bare(name: str) -> str:
    return _ARTICLE.sub("", " ".join(name.split())).strip()


def entity_kind(doc: Document, rules: Rules, eid: str) -> str:
    """player | person | place | item | other, from the entity's type label and from
    how the document uses it (a holder's items, a location's places)."""
    if eid == PLAYER_ID:
        return "player"
    entity = doc.entities[eid]
    label = entity.type.casefold().strip()
    if label in PERSON_TYPES or eid in rules.stats.npcs or eid in rules.cast:
        return "person"
    if label in PLACE_TYPES or eid == doc.scene.location:
        return "place"
    if label in ITEM_TYPES or eid in doc.possessions:
        return "item"
    if any(e.location == eid for e in doc.entities.values()):
        return "place"
    return "other"


def gazetteer(doc: Document, rules: Rules) -> Gazetteer:
    key = tuple(
        (eid, e.name, tuple(e.aliases), e.type, entity_kind(doc, rules, eid))
        for eid, e in doc.entities.items()
    )
    return _gazetteer(key)


@lru_cache(maxsize=64)
def _gazetteer(key: tuple[tuple[str, str, tuple[str, ...], str, str], ...]) -> Gazetteer:
    forms: dict[str, set[str]] = {}
    proper: set[str] = set()
    kinds = {eid: kind for eid, _name, _aliases, _type, kind in key}
    for eid, name, aliases, _type, kind in key:
        for written in (name, *aliases):
            bare = _bare(written)
            low = bare.casefold()
            if not bare or low in ("you", "yourself", "me", "i") or len(low) < 2:
                continue
            forms.setdefault(low, set()).add(eid)
            starts_article = _ARTICLE.match(" ".join(written.split())) is not None
            if kind in ("person", "player") and bare[0].isupper() and not starts_article:
                proper.add(low)
    full = set(forms)
    heads: dict[str, set[str]] = {}
    for eid, name, aliases, _type, kind in key:
        if kind not in ("place", "item"):
            continue
        for written in (name, *aliases):
            words = _bare(written).casefold().split()
            if len(words) < 2:
                continue
            head = re.sub(r"'s$", "", words[-1])
            if len(head) >= 3 and head not in full and head.isalpha():
                heads.setdefault(head, set()).add(eid)
    head_forms = {h for h, ids in heads.items() if len(ids) == 1}
    for h in head_forms:
        forms[h] = set(heads[h])
    if not forms:
        return Gazetteer(None, {}, frozenset(), frozenset(), kinds)
    alternatives = sorted(forms, key=len, reverse=True)
    body = "|".join(r"\s+".join(re.escape(w) for w in f.split()) for f in alternatives)
    pattern = re.compile(
        rf"(?<![\w'-])(?:(?P<det>{_DETS})\s+)?(?P<name>{body})(?P<pos>'s(?![\w])|s'|'(?=\s))?(?![\w-])",
        re.IGNORECASE,
    )
    return Gazetteer(
        pattern,
        {k: tuple(sorted(v)) for k, v in forms.items()},
        frozenset(proper),
        frozenset(head_forms),
        kinds,
    )


# --- tokens ---------------------------------------------------------------------------


@dataclass
class Tok:
    kind: str  # ent | you | pron | word | punct | quote
    text: str
    low: str
    eid: str | None = None
    ekind: str = ""
    det: str = ""
    poss: bool = False


_WORD = re.compile(
    r"⟦\d+⟧|[A-Za-z][A-Za-z'-]*[A-Za-z]|[A-Za-z]|--|[.,;:!?()—–]",
)
_YOU = frozenset({"you", "your", "yours", "yourself"})
_PRONOUNS = frozenset({"he", "she"})
_CONTRACTIONS = ("'re", "'ll", "'d", "'ve", "'s")
_PERSONAL = _YOU | _PRONOUNS


def _words(text: str) -> list[Tok]:
    out: list[Tok] = []
    for m in _WORD.finditer(text):
        raw = m.group()
        if raw.startswith("⟦"):
            out.append(Tok("quote", raw, raw))
            continue
        low = raw.casefold()
        if not raw[0].isalpha():
            out.append(Tok("punct", raw, low))
            continue
        base, contraction = low, ""
        if "'" in low:
            for c in _CONTRACTIONS:
                if low.endswith(c) and low[: -len(c)] in _PERSONAL:
                    base, contraction = low[: -len(c)], c
        if base in _YOU:
            out.append(Tok("you", raw, base, PLAYER_ID, "player", poss=base in ("your", "yours")))
        elif base in _PRONOUNS:
            out.append(Tok("pron", raw, base))
        else:
            out.append(Tok("word", raw, low))
            continue
        if contraction:
            out.append(Tok("word", contraction, contraction))
    return out


def _tokens(sentence: str, gaz: Gazetteer) -> list[Tok]:
    out: list[Tok] = []
    at = 0
    if gaz.pattern is not None:
        for m in gaz.pattern.finditer(sentence):
            name = m.group("name")
            low = " ".join(name.casefold().split())
            det = (m.group("det") or "").casefold()
            if low in gaz.proper and not name[0].isupper():
                continue
            ids = gaz.forms.get(low, ())
            start = m.start() if det not in ("a", "an") else m.start("name")
            if low in gaz.heads and det not in ("the", "your", "this", "that"):
                described = _described(sentence[at : m.start()])
                if described is None or det or gaz.kinds.get(ids[0]) != "place":
                    continue
                det, start = described[0], at + described[1]  # "the fog-slick quay"
            elif not det and len(ids) == 1 and gaz.kinds.get(ids[0]) == "place":
                described = _described(sentence[at : m.start()])
                if described is not None:  # "the fog-bound harbour office"
                    det, start = described[0], at + described[1]
            out += _words(sentence[at:start])
            eid = ids[0] if len(ids) == 1 else None
            out.append(
                Tok(
                    "ent",
                    m.group(),
                    low,
                    eid,
                    gaz.kinds.get(eid or "", "other"),
                    det=det,
                    poss=bool(m.group("pos")),
                )
            )
            at = m.end()
    out += _words(sentence[at:])
    return out


_DESCRIBED = re.compile(
    r"(?<![\w'-])(the|your|this|that)\s+((?:[a-z][a-z-]*,?\s+){0,2}[a-z][a-z-]*\s+)$"
)
_ADJECTIVE_ENDS = ("y", "ed", "en", "ing", "ful", "less", "ous", "ish", "ic", "al", "ive", "ble")
_COMMON_ADJECTIVES = frozenset(
    "old little small great big dark wet damp cold empty quiet long low tall black grey gray "
    "white narrow wide broad bare dim bleak crooked ancient shabby cramped rotten slick "
    "sodden stone wooden timber lonely silent deserted crowded busy familiar same whole main "
    "windswept drab grim cheerless cosy cozy warm".split()
)
_OTHER_ONE = frozenset(
    "other another next far farther further distant opposite second third nearby "
    "neighbouring neighboring each every any no some new former rival".split()
)


def _described(before: str) -> tuple[str, int] | None:
    """ "the fog-slick quay", "the cold, fog-slick quay": a determiner and up to three
    words that describe, right before a place's name or head word — (the determiner,
    where it starts in `before`). Never a word that makes it another place ("the other
    quay", "the fisherman's cottage")."""
    m = _DESCRIBED.search(before)
    if m is None:
        return None
    words = [w.rstrip(",") for w in m.group(2).split()]
    return (m.group(1).casefold(), m.start()) if all(map(_describes, words)) else None


def _describes(word: str) -> bool:
    """A word that may describe a place or a part of it ("fog-slick", "cramped", "old")."""
    if word in _OTHER_ONE or word in lx.LOCATIVE_PREPS or word in lx.NEGATIONS:
        return False
    return "-" in word or word.endswith(_ADJECTIVE_ENDS) or word in _COMMON_ADJECTIVES


# --- quotes and sentences -------------------------------------------------------------

_NORMAL = str.maketrans({"’": "'", "‘": "'", "“": '"', "”": '"', "„": '"', "«": '"', "»": '"'})
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[\"'(A-Z⟦])|(?<=⟧)\s+(?=[A-Z])")


def _mask_quotes(paragraph: str, quotes: list[str]) -> str:
    """The paragraph with each quotation replaced by a placeholder `⟦n⟧` (its words kept
    in `quotes`). A quotation left open runs to the paragraph's end (a speech that goes
    on). A placeholder for a quotation that ended its sentence is followed by a full stop."""
    out, i = [], 0
    while True:
        start = paragraph.find('"', i)
        if start < 0:
            out.append(paragraph[i:])
            break
        end = paragraph.find('"', start + 1)
        out.append(paragraph[i:start])
        inner = paragraph[start + 1 : end if end >= 0 else len(paragraph)]
        ends = inner.rstrip().endswith((".", "!", "?"))
        out.append(f"⟦{len(quotes)}⟧" + ("." if ends else ""))
        quotes.append(inner)
        if end < 0:
            break
        i = end + 1
    return "".join(out)


_MARK = re.compile(r"⟦(\d+)⟧")


def _unmask(sentence: str, quotes: list[str]) -> str:
    out = []
    for piece in re.split(r"(⟦\d+⟧\.?)", sentence):
        m = _MARK.match(piece)
        if m is None:
            out.append(piece)
            continue
        inner = quotes[int(m.group(1))].strip()
        keep_stop = piece.endswith(".") and not inner.endswith((".", "!", "?"))
        out.append("“" + inner + "”" + ("." if keep_stop else ""))
    return "".join(out)


def _single_quotes(paragraph: str) -> str:
    """British quotation marks ('Go home,' he says) turned into double ones, only where
    an opening mark and a closing mark after punctuation clearly pair up."""
    return re.sub(
        r"(?<![\w])'([A-Z][^']*?[,.!?;:—-])'(?![\w])",
        lambda m: '"' + m.group(1) + '"',
        paragraph,
    )


def sentences(text: str) -> list[tuple[str, str]]:
    """The narration's sentences in order, each as (with quotations masked, as written)."""
    out: list[tuple[str, str]] = []
    quotes: list[str] = []
    for paragraph in text.translate(_NORMAL).split("\n"):
        paragraph = paragraph.strip()
        if not paragraph:
            continue
        masked = _mask_quotes(_single_quotes(paragraph), quotes)
        out += [
            (s.strip(), _unmask(s.strip(), quotes))
            for s in _SENTENCE_END.split(masked)
            if s.strip()
        ]
    return out


# --- clauses --------------------------------------------------------------------------

_HARD = frozenset({";", ":", "—", "–", "--", "(", ")"})
_JOINERS = frozenset(
    "and but then while as so yet when if before after until because though although "
    "since who which whose where once unless whenever".split()
)


@dataclass
class Clause:
    toks: list[Tok]
    joiner: str  # the word or mark that opened it ("" for the sentence's first)
    front: list[Tok] = field(default_factory=list)
    """A verbless phrase before it ("Up at the cottage, …", "Tobin, wrapped in oilskins,")."""


def _verb_ahead(toks: list[Tok], i: int, third: bool = True) -> bool:
    """Whether a verb starts at `i` (after adverbs): a clause with an inherited subject."""
    while i < len(toks) and toks[i].kind == "word" and _adverb(toks[i].low):
        i += 1
    if i >= len(toks) or toks[i].kind != "word":
        return False
    word = toks[i].low
    found = lx.lemma(word)
    if found is not None and found[0] in lx.KNOWN_VERBS:
        return word not in ("a", "an", "the")
    return third and lx.third_person(word)


def _subject_ahead(toks: list[Tok], i: int) -> bool:
    if i >= len(toks):
        return False
    tok = toks[i]
    if tok.kind in ("you", "pron") and not tok.poss:
        return _verb_ahead(toks, i + 1)
    if tok.kind == "ent" and not tok.poss:
        return _verb_ahead(toks, i + 1)
    return False


def _adverb(word: str) -> bool:
    return word in lx.ADVERBS or (word.endswith("ly") and lx.lemma(word) is None)


def _is_subject(tok: Tok | None) -> bool:
    """A token that can be one of a list of subjects: a person's name, "you", he or she."""
    if tok is None or tok.poss:
        return False
    return tok.kind in ("you", "pron") or (tok.kind == "ent" and tok.ekind in ("person", "player"))


def _only_subjects(toks: list[Tok]) -> bool:
    """ "Maren, Tobin": names so far, and commas between them — a list of subjects."""
    return bool(toks) and all(
        _is_subject(t) if k % 2 == 0 else (t.kind == "punct" and t.low == ",")
        for k, t in enumerate(toks)
    )


def clauses(toks: list[Tok]) -> list[Clause]:
    out: list[Clause] = []
    current: list[Tok] = []
    joiner = ""
    i = 0
    while i < len(toks):
        tok = toks[i]
        if tok.kind == "punct" and tok.low in _HARD:
            out.append(Clause(current, joiner))
            current, joiner = [], tok.low
            i += 1
            continue
        after = toks[i + 2] if i + 2 < len(toks) else None
        if (  # "Maren and Tobin haul …", "Maren, Tobin, and you …": one list of subjects
            _only_subjects(current)
            and ((tok.kind == "word" and tok.low == "and") or tok.low == ",")
            and (
                _is_subject(toks[i + 1] if i + 1 < len(toks) else None)
                or (tok.low == "," and _word_at(toks, i + 1) == "and" and _is_subject(after))
            )
        ):
            current.append(tok)
            i += 1
            continue
        if tok.kind == "punct" and tok.low == ",":
            nxt = toks[i + 1] if i + 1 < len(toks) else None
            if nxt is not None and nxt.kind == "word" and nxt.low in _JOINERS:
                out.append(Clause(current, joiner))
                current, joiner = [], "," + nxt.low
                i += 2
                continue
            if _subject_ahead(toks, i + 1) or _verb_ahead(toks, i + 1):
                out.append(Clause(current, joiner))
                current, joiner = [], ","
                i += 1
                continue
        if (
            tok.kind == "word"
            and tok.low in _JOINERS
            and current
            and (_subject_ahead(toks, i + 1) or _verb_ahead(toks, i + 1))
        ):
            out.append(Clause(current, joiner))
            current, joiner = [], tok.low
            i += 1
            continue
        current.append(tok)
        i += 1
    out.append(Clause(current, joiner))
    return [c for c in out if c.toks]


# --- verb groups ----------------------------------------------------------------------


@dataclass
class VerbGroup:
    at: int  # index of the main verb
    end: int  # index after it (and its particle)
    lemma: str
    tense: str  # present | past | ing | participle
    moods: list[str] = field(default_factory=list)
    passive: bool = False
    text: str = ""


_BE_FORMS = frozenset({"is", "are", "am", "was", "were", "'s", "'re", "be", "been", "being"})
_HAVE_FORMS = frozenset({"has", "have", "had", "'ve"})


_PAST_OR_S = frozenset({"has", "does", "is"})
_INVERTING = frozenset(
    "does do did is are was were will would can could shall should may might must has have "
    "had".split()
)


def verb_group(
    toks: list[Tok],
    i: int,
    you: bool,
    plural: bool = False,
    inverted: str = "",
    bare: bool = False,
) -> VerbGroup | None:
    """The verb group after a subject ending at `i`: auxiliaries, negation, modals and
    the main verb (whose form must agree with a singular name, or with "you").
    `inverted`: the auxiliary before the subject of a question ("Does Tobin laugh?").
    `bare`: the subject opens its clause, so after "you" or a list an unknown plain word
    followed by an object may be its verb (`_bare_verb`)."""
    moods: list[str] = [lx.MODALS[inverted]] if inverted in lx.MODALS else []
    tense_aux = "past" if inverted in ("did", "was", "were", "had") else ""
    be_aux = inverted in _BE_FORMS
    if inverted in ("does", "do", "has", "have"):
        tense_aux = "present" if inverted in ("does", "do") else "perfect"
    j = i
    n = len(toks)
    be_now = False
    while j < n and toks[j].kind == "word":
        w = toks[j].low
        if _adverb(w) and w not in ("here", "there", "back") and w not in lx.NEGATIONS:
            j += 1
            continue
        if w in lx.NEGATIONS or w.endswith("n't"):
            moods.append("negated")
            if w.endswith("n't"):
                stem = w[:-3]
                if stem in ("wo", "would", "could", "should", "ca", "can", "must", "might"):
                    moods.append("conditional" if stem not in ("wo",) else "planned")
                if stem in ("was", "were", "did", "had"):
                    tense_aux = "past"
                if stem in ("is", "are", "was", "were"):
                    be_aux = True
            j += 1
            continue
        if w in lx.MODALS:
            moods.append(lx.MODALS[w])
            j += 1
            continue
        if w in ("do", "does", "did"):
            if w == "did":
                tense_aux = "past"
            j += 1
            continue
        if w in _BE_FORMS or w in _HAVE_FORMS:
            nxt = _next_word(toks, j + 1)
            found = lx.lemma(nxt.low) if nxt is not None else None
            if (
                nxt is not None
                and nxt.low in ("going", "about")
                and _word_at(toks, _index_of(toks, nxt) + 1) == "to"
            ):
                moods.append("planned")
                j = _index_of(toks, nxt) + 2
                continue
            if found is not None and (
                (w in _BE_FORMS and found[1] in ("ing", "participle", "past"))
                or (w in _HAVE_FORMS and found[1] in ("participle", "past"))
            ):
                if w in ("was", "were", "had"):
                    tense_aux = "past"
                elif w in _HAVE_FORMS:
                    tense_aux = tense_aux or "perfect"
                be_aux = be_aux or w in _BE_FORMS
                be_now = be_now or w in ("is", "are", "am", "'s", "'re")
                j += 1
                continue
            # the main verb is be or have itself
            if w in ("was", "were", "had"):
                return VerbGroup(j, j + 1, "be" if w != "had" else "have", "past", moods, text=w)
            if w in ("be", "been", "being") and not moods and not tense_aux:
                return None
            if you and w not in ("are", "'re", "were", "have", "'ve", "had", "be", "been"):
                return None
            if not you and w in ("are", "'re", "have", "'ve") and not plural:
                return None
            return VerbGroup(
                j, j + 1, "be" if w in _BE_FORMS else "have", tense_aux or "present", moods, text=w
            )
        break
    if j >= n or toks[j].kind != "word":
        return None
    word = toks[j].low
    found = lx.lemma(word)
    if found is None and (you or plural) and bare and not (moods or tense_aux or be_aux):
        if _bare_verb(toks, j):
            found = (word, "present")  # "you wring the seawater": a verb it does not know
    if found is None:
        if you or plural or moods or tense_aux or be_aux or not lx.third_person(word):
            return None
        found = (word[:-1], "present")  # an -s verb the lexicon does not know: it still acts
    base, tense = found
    if not (moods or tense_aux or be_aux):
        if you or plural:
            if tense == "present" and word != base and base not in ("be", "have"):
                return None  # "you walks": not a verb after "you"
            if tense in ("ing", "participle"):
                return None
        else:
            if tense == "present" and not lx.third_person(word):
                return None  # "Tobin walk": no agreement (an infinitive, a noun)
            if tense in ("ing", "participle"):
                return None
    else:
        needs_base = (
            any(m in ("planned", "conditional") for m in moods)
            or tense_aux
            in (
                "present",
                "past",
            )
            and not be_aux
            and toks[j - 1].low not in _HAVE_FORMS
        )
        if tense == "present" and word != base and needs_base and word not in _PAST_OR_S:
            return None
    end = j + 1
    passive = be_aux and tense in ("past", "participle")
    if tense_aux == "past":
        tense = "past"
    elif tense_aux == "perfect":
        tense = "perfect"
    elif be_aux and (tense == "ing" or be_now):
        tense = "present"  # "is hauling", "is knocked out": now
    # "tries to open", "begins to laugh": the verb after "to"
    if _word_at(toks, end) == "to" and base in lx.PLAN_CUES | {
        "begin",
        "start",
        "seem",
        "continue",
    }:
        after = _next_word(toks, end + 1)
        inner = lx.lemma(after.low) if after is not None else None
        if after is not None and inner is not None:
            if base in lx.PLAN_CUES:
                moods.append("planned")
            elif base == "seem":
                moods.append("conditional")
            k = _index_of(toks, after)
            return VerbGroup(k, k + 1, inner[0], tense, moods, passive, after.text)
    return VerbGroup(j, end, base, tense, moods, passive, toks[j].text)


def _next_word(toks: list[Tok], i: int) -> Tok | None:
    while i < len(toks) and toks[i].kind == "word" and _adverb(toks[i].low):
        i += 1
    return toks[i] if i < len(toks) and toks[i].kind == "word" else None


def _index_of(toks: list[Tok], tok: Tok) -> int:
    for k, t in enumerate(toks):
        if t is tok:
            return k
    return -1


def _word_at(toks: list[Tok], i: int) -> str:
    return toks[i].low if 0 <= i < len(toks) and toks[i].kind == "word" else ""


def _skind(tok: Tok, who: str) -> str:
    return "you" if tok.kind == "you" else ("player" if who == PLAYER_ID else "person")


def _subject_list(toks: list[Tok], i: int) -> tuple[list[int], int]:
    """The subjects listed from `i` ("Maren, Tobin and you") and the index after them."""
    members = [i]
    j = i + 1
    while j < len(toks):
        if _word_at(toks, j) == "and" and _is_subject(toks[j + 1] if j + 1 < len(toks) else None):
            return [*members, j + 1], j + 2
        if toks[j].kind == "punct" and toks[j].low == ",":
            if _word_at(toks, j + 1) == "and" and j + 2 < len(toks) and _is_subject(toks[j + 2]):
                return [*members, j + 2], j + 3
            if j + 1 < len(toks) and _is_subject(toks[j + 1]):
                members.append(j + 1)
                j += 2
                continue
        break
    return [i], i + 1


_OPENERS = frozenset({"and", "then", "so", "but", "as", "while", "now", "yet"})
_OBJECT_START = frozenset(
    "the a an your his her their its it them him this that these those some".split()
)


def _opens(toks: list[Tok], i: int) -> bool:
    """Whether the subject at `i` opens its clause (not "Maren watches you …")."""
    return i == 0 or toks[i - 1].kind == "punct" or toks[i - 1].low in _OPENERS


def _bare_verb(toks: list[Tok], j: int) -> bool:
    """An unknown word read as the verb after "you" or a list of subjects that open their
    clause ("you wring the seawater", "Oda and the clerk pore over a ledger"): a plain
    lowercase word, then an object or a preposition."""
    word = toks[j].low
    if not (word.isalpha() and word.islower() and len(word) >= 3) or word.endswith("ly"):
        return False
    if word.endswith("s") and not word.endswith("ss"):
        return False
    closed = lx.NOT_VERBS | lx.LOCATIVE_PREPS | lx.PARTICLES | lx.NEGATIONS | lx.ADVERBS
    if word in closed | _OBJECT_START | _JOINERS | set(lx.MODALS) | lx.PLAN_WORDS | lx.PAST_CUES:
        return False
    nxt = toks[j + 1] if j + 1 < len(toks) else None
    if nxt is None:
        return False
    if nxt.kind == "you":
        return nxt.low == "your"
    return nxt.kind == "word" and nxt.low in _OBJECT_START | lx.LOCATIVE_PREPS | lx.PARTICLES


# --- the reading ----------------------------------------------------------------------


@dataclass
class _SV:
    subject: str
    skind: str
    at: int  # the subject's token index
    group: VerbGroup
    inherited: bool = False
    frame: str = ""
    held: str | None = None
    """An item the subject's grip or hand is on ("Maren's grip on the key is tight")."""


class _Reader:
    def __init__(self, doc: Document, rules: Rules) -> None:
        self.doc = doc
        self.gaz = gazetteer(doc, rules)
        self.claims: list[Claim] = []
        self.persons_seen: set[str] = set()
        self.unnamed_seen = False
        self.group: tuple[str, ...] | None = None
        """The people "they both" means: the last list of named people, while no one
        else, and nothing in the plural, has been named since."""
        self.group_at = -1
        self.sentence_no = 0
        self.here = (
            doc.scene.location or doc.entities[PLAYER_ID].location
            if PLAYER_ID in doc.entities
            else doc.scene.location
        )

    # pronouns: "he"/"she" only when one named person is in play and no unnamed one
    def _resolve(self, tok: Tok) -> str | None:
        if tok.kind == "you":
            return PLAYER_ID
        if tok.kind == "ent":
            return tok.eid if tok.ekind in ("person", "player") else None
        if tok.kind == "pron" and len(self.persons_seen) == 1 and not self.unnamed_seen:
            return next(iter(self.persons_seen))
        return None

    def read(self, text: str) -> list[Claim]:
        for n, (masked, written) in enumerate(sentences(text)):
            self.sentence = written
            self.sentence_no = n
            self._sentence(masked)
        for i, claim in enumerate(self.claims):
            object.__setattr__(claim, "index", i)
        return self.claims

    def _sentence(self, sentence: str) -> None:
        self.gone: set[str] = set()
        toks = _tokens(sentence, self.gaz)
        asked = sentence.rstrip().endswith("?")
        low = " " + " ".join(t.low for t in toks) + " "
        sentence_frame = ""
        for phrase in lx.AS_IF:
            if f" {phrase} " in low and phrase != "like":
                sentence_frame = "conditional"
        parts = clauses(toks)
        last_subject: _SV | None = None
        frame = sentence_frame
        framed_from = -1
        all_svs: list[tuple[Clause, _SV]] = []
        carry: list[Tok] = []
        for ci, clause in enumerate(parts):
            if clause.joiner in (";", ":", "—", "–", "--", ",and", ",but", ",then", "then"):
                frame = sentence_frame
            pending = None
            participle: list[Tok] = []
            if carry:  # "Up at the cottage, Tobin lights a lamp": the phrase leads the clause
                clause = Clause(clause.toks, clause.joiner, carry)
                pending = self._fragment_subject(carry)
                participle = carry if _participle(carry) else []
                if participle:  # its places are its verb's ("Gazing at the lighthouse, …")
                    clause = Clause(clause.toks, clause.joiner)
                carry = []
            inherit = pending or last_subject
            if clause.joiner.lstrip(",") in ("who", "that", "which", "whose", "where"):
                # "…the clerk, who shrugs": the clause is about the name just before it
                inherit = self._antecedent(parts[ci - 1].toks) if ci else None
            svs = self._svs(clause, inherit)
            if not svs and ci + 1 < len(parts) and parts[ci + 1].joiner == ",":
                carry = clause.front + clause.toks
                self._note_people(clause)
                continue
            # a clause whose subject is inherited ("…and hands you the rope") is told as
            # its first subject's clause was, not inside what that subject said
            for sv in svs:
                all_svs.append((clause, sv))
            clause_frame = frame
            conditional = clause.joiner.lstrip(",") in lx.SUBORDINATE_CONDITIONAL or (
                clause.toks
                and clause.toks[0].kind == "word"
                and clause.toks[0].low in lx.SUBORDINATE_CONDITIONAL
            )
            pos_frames = [(-2, m) for _k, m in self._frames(Clause(clause.front or participle, ""))]
            pos_frames += self._frames(clause)
            for sv in svs:
                f = clause_frame
                if sv.inherited and last_subject is not None:
                    f = last_subject.frame
                for k, name in pos_frames:
                    if k < sv.at:
                        f = f or name
                if conditional:
                    f = f or "conditional"
                sv.frame = f
                if participle and sv is svs[0]:
                    # "Gripping the brass key, you head for the tower": the clause's subject
                    # grips the key, as told as the clause is
                    self._participle_claims(participle, sv, asked)
                    participle = []
                later = [x.at for x in svs if x.at > sv.at]
                self._claims(clause, sv, self.sentence, asked, min(later, default=len(clause.toks)))
                if not sv.inherited or last_subject is None:
                    last_subject = sv
                if sv.group.lemma in lx.THOUGHT_CUES | lx.MEMORY_CUES | lx.REPORT_CUES:
                    # what follows the cue in its sentence is thought, remembered or reported
                    frame = frame or _cue_mood(sv.group.lemma)
                    clause_frame = clause_frame or frame
                    framed_from = ci
            for k, name in pos_frames:
                if not svs or k > svs[-1].at:
                    frame = frame or name
            self._note_people(clause)
        # "Tobin laughs, you remember.": a closing cue frames the whole sentence
        if len(parts) > 1 and all_svs:
            clause, sv = all_svs[-1]
            tail = [t for t in clause.toks[sv.group.end :] if t.kind != "punct"]
            if (
                not tail
                and sv.group.lemma in lx.THOUGHT_CUES | lx.MEMORY_CUES | lx.REPORT_CUES
                and framed_from == len(parts) - 1
                and clause.joiner == ","
            ):
                mood = _cue_mood(sv.group.lemma)
                start = len(self.claims)
                for k in range(len(self.claims) - 1, -1, -1):
                    if self.claims[k].sentence != self.sentence:
                        break
                    start = k
                for k in range(start, len(self.claims)):
                    c = self.claims[k]
                    if c.subject != sv.subject or c.verb != sv.group.text:
                        self.claims[k] = _with_mood(c, mood)

    def _participle_claims(self, phrase: list[Tok], sv: _SV, asked: bool) -> None:
        verb = lx.lemma(phrase[0].low)
        if verb is None:
            return
        group = VerbGroup(0, 1, verb[0], sv.group.tense, list(sv.group.moods), text=phrase[0].text)
        done = _SV(sv.subject, sv.skind, -1, group, inherited=True, frame=sv.frame)
        self._claims(Clause(phrase, ""), done, self.sentence, asked, len(phrase))

    def _antecedent(self, toks: list[Tok]) -> _SV | None:
        if not toks or toks[-1].kind != "ent" or toks[-1].poss or toks[-1].ekind != "person":
            return None
        subject = toks[-1].eid
        if subject is None:
            return None
        return _SV(subject, "person", -1, VerbGroup(0, 0, "", "present"))

    def _fragment_subject(self, toks: list[Tok]) -> _SV | None:
        """ "Tobin, wrapped in oilskins, watches you": the name before an aside is the
        subject of the verb after it."""
        if not toks or toks[0].kind not in ("ent", "you", "pron") or toks[0].poss:
            return None
        if len(toks) < 2 or toks[1].kind != "punct" or toks[1].low != ",":
            return None
        subject = self._resolve(toks[0])
        if subject is None:
            return None
        skind = "you" if toks[0].kind == "you" else ("player" if subject == PLAYER_ID else "person")
        return _SV(subject, skind, -1, VerbGroup(0, 0, "", "present"))

    def _group_after(
        self, group: tuple[str, ...] | None, toks: list[Tok]
    ) -> tuple[tuple[str, ...] | None, bool]:
        """The people "they both" means after `toks`, and whether `toks` listed them: a
        list of named people ("Maren and Tobin") sets it; anyone else named, people the
        state does not name, or a plural, unset it."""
        listed = False
        k = 0
        while k < len(toks):
            tok = toks[k]
            if tok.kind == "ent" and tok.ekind == "person" and not tok.poss:
                members, after = _subject_list(toks, k)
                ids = tuple(self._resolve(toks[m]) or "" for m in members)
                if len(ids) > 1:
                    whole = _word_at(toks, after) not in ("and", "or", "nor")
                    known = all(x and x != PLAYER_ID for x in ids) and len(set(ids)) == len(ids)
                    group = ids if whole and known else None
                    listed = group is not None
                    k = after
                    continue
                if group is not None and tok.eid not in group:
                    group = None
            elif tok.kind == "ent" and tok.ekind == "person" and tok.eid not in (group or ()):
                group = None  # "Wat's boat": Wat is named
            elif tok.kind == "word" and (
                tok.low in lx.UNNAMED_PEOPLE
                or tok.low.rstrip("s'") in lx.UNNAMED_PEOPLE
                or _plural_noun(tok.low)
            ):
                group = None  # "two gulls": they, too, may be "they both"
            k += 1
        return group, listed and group is not None

    def _note_people(self, clause: Clause) -> None:
        self.group, listed = self._group_after(self.group, clause.front + clause.toks)
        if listed:
            self.group_at = self.sentence_no
        for tok in clause.toks:
            if tok.kind == "ent" and tok.ekind == "person" and tok.eid:
                self.persons_seen.add(tok.eid)
            elif tok.kind == "ent" and tok.ekind == "person" and tok.eid is None:
                self.unnamed_seen = True
            elif tok.kind == "word" and (
                tok.low in lx.UNNAMED_PEOPLE or tok.low.rstrip("s'") in lx.UNNAMED_PEOPLE
            ):
                self.unnamed_seen = True

    def _frames(self, clause: Clause) -> list[tuple[int, str]]:
        """Words that frame what follows them in the sentence: nominal cues ("according
        to", "in your memory", "if", "perhaps") and the past's own markers."""
        out = []
        toks = clause.toks
        for k, tok in enumerate(toks):
            if tok.kind != "word":
                continue
            verb = lx.lemma(tok.low)
            if (
                verb is not None
                and verb[0] in lx.THOUGHT_CUES | lx.MEMORY_CUES | lx.REPORT_CUES
                and verb[1] in ("present", "past")
                and _word_at(toks, k - 1) not in ("to", "a", "the", "your", "his", "her")
            ):
                out.append((k, _cue_mood(verb[0])))  # "the boatmen say …"
                continue
            mood = lx.NOMINAL_CUES.get(tok.low)
            if (
                mood in ("remembered", "thought")
                and k >= 2
                and toks[k - 1].low in ("your", "his", "her", "their", "my")
                and _word_at(toks, k - 2) == "in"
            ):
                out.append((-3, mood))  # "Tobin laughs in your memory": the whole clause
                continue
            if mood:
                if tok.low == "word" and _word_at(toks, k + 1) not in ("is", "has"):
                    continue
                if tok.low in (
                    "story",
                    "stories",
                    "tale",
                    "tales",
                    "dream",
                    "dreams",
                    "mind",
                    "thought",
                    "thoughts",
                ) and not (
                    _word_at(toks, k + 1) in ("of", "that", "about")
                    or _word_at(toks, k - 1) in ("your", "his", "her", "in", "their")
                ):
                    continue
                out.append((k, mood))
        return out

    def _svs(self, clause: Clause, inherit: _SV | None) -> list[_SV]:
        toks = clause.toks
        out: list[_SV] = []
        i = 0
        first = True
        while i < len(toks):
            tok = toks[i]
            # a clause that starts with its verb takes the subject before it
            if first and inherit is not None and tok.kind == "word":
                first = False
                k = i
                while k < len(toks) and toks[k].kind == "word" and _adverb(toks[k].low):
                    k += 1
                you = inherit.skind == "you"
                if k < len(toks) and toks[k].kind == "word" and toks[k].low not in _JOINERS:
                    found = lx.lemma(toks[k].low)
                    if (
                        found is not None
                        and found[1] == "ing"
                        and clause.joiner in (",", ",and", "and")
                    ):
                        g = VerbGroup(
                            k,
                            k + 1,
                            found[0],
                            inherit.group.tense,
                            list(inherit.group.moods),
                            text=toks[k].text,
                        )
                        out.append(_SV(inherit.subject, inherit.skind, -1, g, inherited=True))
                        i = k + 1
                        continue
                    group = verb_group(toks, i, you)
                    if group is not None:
                        out.append(_SV(inherit.subject, inherit.skind, -1, group, inherited=True))
                        i = group.end
                        continue
            first = False
            subject = None
            skind = ""
            if tok.kind in ("you", "ent", "pron") and not tok.poss:
                subject = self._resolve(tok)
                skind = (
                    "you" if tok.kind == "you" else ("player" if subject == PLAYER_ID else "person")
                )
            elif tok.kind == "word" and tok.low in ("who", "that") and i > 0:
                prev = (
                    toks[i - 1] if toks[i - 1].kind != "punct" else (toks[i - 2] if i > 1 else None)
                )
                if (
                    prev is not None
                    and prev.kind == "ent"
                    and prev.ekind == "person"
                    and prev.eid
                    and not prev.poss
                ):
                    subject, skind = prev.eid, "person"
            if subject is None and tok.kind == "word":
                both = self._both(toks, i)  # "they both laugh", "the two of them argue"
                if both:
                    out += both
                    i = both[0].group.end
                    continue
            if subject is None:
                part = self._body_part(toks, i) or self._in_hand(toks, i)
                if part is not None:  # "the keeper's gnarled hands fumble …"
                    out.append(part)
                    i = part.group.end
                    continue
                i += 1  # an unresolved pronoun, a place, a thing: no subject
                continue
            # "Maren and Tobin argue", "you and Maren climb", "Maren, Tobin and you huddle"
            members, after = _subject_list(toks, i)
            if len(members) > 1:
                group = verb_group(toks, after, you=False, plural=True, bare=_opens(toks, i))
                if group is not None:
                    for k in members:
                        who = self._resolve(toks[k])
                        if who is not None:
                            out.append(_SV(who, _skind(toks[k], who), k, group))
                    i = group.end
                    continue
            before = toks[i - 1].low if i > 0 and toks[i - 1].kind == "word" else ""
            inverted = before if before in _INVERTING and i == 1 else ""
            group = verb_group(
                toks, i + 1, you=skind == "you", inverted=inverted, bare=_opens(toks, i)
            )
            if group is None:
                i += 1
                continue
            out.append(_SV(subject, skind, i, group))
            i = group.end
        if not out:
            inverted_sv = self._inversion(clause)
            if inverted_sv is not None:
                out.append(inverted_sv)
        return out

    def _both(self, toks: list[Tok], i: int) -> list[_SV]:
        """ "They both laugh", "they are all asleep", "both of them nod", "the two of
        them argue": each of the people last listed by name does it. Plain "they" may
        mean anyone (boats, fishermen, the scenario's unnamed), so it claims nothing."""
        span = _group_span(toks, i)
        if span is None:
            return []
        after, size = span
        recent = self.group if self.sentence_no - self.group_at <= 1 else None
        group, _ = self._group_after(recent, toks[:i])
        if not group or (size is not None and len(group) != size):
            return []
        g = verb_group(toks, after, you=False, plural=True)
        if g is None:
            return []
        return [_SV(who, "person", i, g) for who in group]

    def _body_part(self, toks: list[Tok], i: int) -> _SV | None:
        """ "The keeper's gnarled hands fumble with a rope", "your fingers close on the key":
        a person's hands act where that person is (`lexicon.BODY_PARTS`)."""
        tok = toks[i]
        if not tok.poss or (tok.kind == "you" and tok.low != "your"):
            return None
        if tok.kind == "ent" and tok.ekind != "person" or tok.kind not in ("ent", "you"):
            return None
        who = self._resolve(tok)
        for j in range(i + 1, min(i + 4, len(toks))):
            if toks[j].kind != "word":
                return None
            part = toks[j].low
            holding = part in lx.GRIP_NOUNS or part in lx.HOLDING_PARTS
            if part in lx.BODY_PARTS or holding:
                if who is None:
                    return None
                plural = part.endswith("s")
                held = _held_after(toks, j + 1) if holding else None
                if held is not None:  # "Maren's grip on the key is tight"
                    group = verb_group(toks, held[1], you=False, plural=plural)
                    if group is None:
                        return None
                    return _SV(who, _skind(tok, who), j, group, held=held[0])
                group = verb_group(toks, j + 1, you=False, plural=plural)
                if holding and group is None:
                    group = _grip_verb(toks, j + 1, plural)
                if group is None:
                    return None
                if holding and (_grip_lemma(group.lemma) or group.lemma == "be"):
                    held = _held_after(toks, group.end, after_verb=True)
                    if held is not None:  # "her fingers tighten on the key"
                        return _SV(who, _skind(tok, who), j, group, held=held[0])
                if part not in lx.BODY_PARTS or group.lemma in ("be", "have"):
                    return None
                return _SV(who, _skind(tok, who), j, group)
        return None

    def _in_hand(self, toks: list[Tok], i: int) -> _SV | None:
        """ "The brass key glints in Maren's hand", "the key in your fist is cold": an
        item the clause is about, in someone's hand — that one holds it, as told as the
        item's verb is."""
        item = _item(toks[i])
        if item is None or toks[i].poss:
            return None
        plural = toks[i].low.endswith("s") and not toks[i].low.endswith("ss")  # "the coins"
        holder = _in_hand_at(toks, i + 1)
        if holder is not None:  # "the key in Maren's hand is cold"
            group = verb_group(toks, holder[1], you=False, plural=plural)
        else:
            group = verb_group(toks, i + 1, you=False, plural=plural)
            if group is None:
                return None
            k = group.end
            while _word_at(toks, k) and _adverb(_word_at(toks, k)):
                k += 1
            if _describes(_word_at(toks, k)):
                k += 1  # "sits heavy in your palm"
            holder = _in_hand_at(toks, k)
        if group is None or holder is None:
            return None
        who = self._resolve(holder[0])
        if who is None:
            return None
        return _SV(who, _skind(holder[0], who), i, group, held=item)

    def _inversion(self, clause: Clause) -> _SV | None:
        """ "Beside the lobster pots stands Tobin", "Down the pier comes the keeper": a
        place phrase, a verb of standing or coming, then the one who does it. The clause
        is put back in plain order ("Tobin stands beside the lobster pots") and read so."""
        toks = clause.toks
        if not toks or toks[0].kind != "word":
            return None
        if toks[0].low not in lx.LOCATIVE_PREPS | lx.PARTICLES:
            return None
        for k in range(1, len(toks) - 1):
            verb, who = toks[k], toks[k + 1]
            if verb.kind != "word":
                continue
            found = lx.lemma(verb.low)
            if found is None or found[0] not in lx.POSTURE | lx.STEP_IN | {"come"}:
                continue
            if found[1] not in ("present", "past") or not lx.third_person(verb.low):
                return None
            if not _is_subject(who) or who.kind != "ent":
                return None
            if k + 2 < len(toks) and toks[k + 2].kind != "punct":
                return None
            subject = self._resolve(who)
            if subject is None:
                return None
            toks[:] = [who, verb, *toks[:k], *toks[k + 2 :]]
            group = VerbGroup(1, 2, found[0], found[1], text=verb.text)
            return _SV(subject, _skind(who, subject), 0, group)
        return None

    # --- from a subject and its verb to claims ---------------------------------------

    def _claims(self, clause: Clause, sv: _SV, sentence: str, asked: bool, end: int) -> None:
        toks = clause.toks
        g = sv.group
        rest = toks[g.end : max(end, g.end)]
        front = clause.front + (toks[: max(sv.at, 0)] if sv.at >= 0 else [])
        mood = _mood(sv, asked, front + rest)
        base = g.lemma
        subject = sv.subject
        player = subject == PLAYER_ID

        def add(kind: str, who: str = subject, **kw: object) -> None:
            if kind == "acts" and kw.get("where") == "here" and who in self.gone:
                kw["where"] = None  # "walks into the office and slams the door": not here
            if kind in ("moves", "leaves") and kw.get("object") != self.here:
                self.gone.add(who)
            self.claims.append(
                Claim(kind, who, mood=mood, verb=g.text, sentence=sentence, **kw)  # type: ignore[arg-type]
            )

        if sv.held is not None:  # "Maren's grip on the key is tight": she holds it
            add("uses", object=sv.held)
            return

        # "…the cottage, where Tobin lives": a clause about somewhere else
        distant_clause = clause.joiner.lstrip(",") == "where"
        if g.passive:
            if base in lx.KILL:
                add("status", object="dead")
            elif base == "knock" and _word_at(rest, 0) in ("out", "unconscious", "senseless"):
                add("status", object="unconscious")
            elif base == "dead" and g.tense == "present" and _said_plainly(rest, self.gaz):
                add("status", object="dead")  # "Brannoc is dead."
            return
        act = _act_category(base, rest)
        # where the clause puts its subject
        # where the clause puts its subject: a place right after the verb ("sits in the
        # cottage") or before the clause ("Up at the cottage, …"); a place after the
        # verb's object is the object's ("takes the lantern on top of the lighthouse");
        # what one looks, points or calls at is a target ("stares at the lighthouse")
        leading = _leading(rest)
        if base in lx.AIMED and _word_at(leading, 0) in ("at", "toward", "towards"):
            leading = []
        place = _place_after(leading, lx.AT_PREPS, self.gaz) or _place_after(
            front, lx.AT_PREPS, self.gaz
        )
        distant = (
            distant_clause
            or _distant(front + rest)
            or base in lx.PERCEIVE | lx.HAVE
            or (
                place is None and _place_after(rest, lx.AT_PREPS, self.gaz) not in (None, self.here)
            )
        )
        if (
            base in lx.DIE
            or (base in ("fall", "drop") and _word_at(rest, 0) == "dead")
            or (base == "breathe" and _word_at(rest, 1) == "last")
        ):
            add("status", object="dead")
            return
        if _falls_asleep(base, rest):
            add("status", object="asleep")
            return
        if _passes_out(base, rest):
            add("status", object="unconscious")
            return
        if base in lx.WAKE:
            add("status", object="awake")
            add("acts", act="rest", where=None)
            return
        if base in lx.KILL:
            victim = _first_person(rest, self)
            add("acts", act="use", where=place or (None if distant else "here"))
            if victim is not None:
                add("status", victim, object="dead")
            return
        # going somewhere, arriving, leaving
        moved = self._movement(sv, base, rest, front)
        if moved is not None:
            kind, target = moved
            if kind == "carries":  # the player is taken there; the one who takes them acts
                add("moves", PLAYER_ID, object=target)
                add("acts", act="move", where=None)
                return
            if kind == "moves" and not player and target == self.here and self.here:
                kind = "arrives"
            add(kind, object=target)
            add("acts", act="move", where=None)
            return
        # "You're back at the quay", "Tobin is back in his cottage": a return told outright
        if base == "be" and g.tense == "present" and _word_at(rest, 0) == "back":
            found = _place_at(rest, 2, self.gaz) if _word_at(rest, 1) in lx.BACK_PREPS else None
            if found is not None:
                kind = "arrives" if not player and found[0] == self.here and self.here else "moves"
                add(kind, object=found[0])
                add("acts", act="move", where=None)
                return
        # "Maren is fast asleep", "Brannoc lies dead on the quay": a state said outright
        if (base == "be" or base in lx.POSTURE) and g.tense == "present":
            k = 0
            while _word_at(rest, k) in lx.STATE_INTENSIFIERS:
                k += 1
            said = lx.STATE_WORDS.get(_word_at(rest, k))
            if said is not None and _said_plainly(rest[k + 1 :], self.gaz):
                add("status", object=said)
                return
        # being or staying somewhere
        if (
            base == "be"
            or base in lx.POSTURE
            or (base == "find" and rest and rest[0].low == "yourself")
        ):
            spot = _place_after(rest[1:] if base == "find" else rest, lx.AT_PREPS, self.gaz)
            if spot is None and front:
                spot = _place_after(front, lx.AT_PREPS, self.gaz)
            if spot is not None:
                add("at", object=spot)
                if not player:
                    add("acts", act=act, where=spot)
                return
            if base == "be":
                if _here_words(rest):
                    add("acts", act="act", where="here")
                return
            add("acts", act=act, where=None if distant or player else "here")
            return
        self._items(base, rest, add)
        if player:  # "Inside the lighthouse, you shake the rain from your coat."
            if not distant and _place_after(front, lx.AT_PREPS, self.gaz):
                add("at", object=place)
            elif base in lx.PERCEIVE | lx.SPEECH | lx.SIGNAL:
                # "From the gallery of the lighthouse you look down": you are where you look from
                seen_from = _place_after(front, ("from",), self.gaz) or _place_after(
                    _leading(rest), ("from",), self.gaz
                )
                if seen_from is not None and not _away_from(front + rest):
                    add("at", object=seen_from)
            add("acts", act=act, where=None)
            return
        add("acts", act=act, where=place or (None if distant else "here"))

    def _movement(
        self, sv: _SV, base: str, rest: list[Tok], front: list[Tok]
    ) -> tuple[str, str | None] | None:
        """(kind, place) for a clause that takes its subject somewhere: `moves` to a named
        place, `arrives` here, `leaves` (for a named place, if any), or `carries` (the
        player taken to a place by the subject)."""
        player = sv.subject == PLAYER_ID
        if base in lx.CARRY and rest and rest[0].kind == "you" and rest[0].low == "you":
            target = _place_after(rest[1:], lx.ARRIVAL_PREPS, self.gaz)
            return ("carries", target) if target is not None else None
        if base in lx.MOTION or base in lx.ARRIVE or base == "follow":
            target = _place_after(rest, lx.ARRIVAL_PREPS, self.gaz, skip_people=True)
            if target is None and base in lx.ARRIVE:
                target = _place_after(rest, ("at", "in"), self.gaz)
            if target is not None:
                return "moves", target
            if player:
                return None
            if _from_within(rest, self.gaz, self.here):
                return None  # "Wat hurries over from the altar": he was here already
            if base == "join" and rest and rest[0].kind == "you":
                return "arrives", None
            if base == "appear" and not _distant(front + rest):
                return "arrives", None
            if base == "arrive" and not _distant(front + rest) and not _has_place(rest):
                return "arrives", None
            if (
                base in lx.STEP_IN
                and _word_at(rest, 0) in ("in", "inside", "over", "up", "closer", "near", "aboard")
                and not _distant(front + rest)
                and not _has_place(rest)
            ):
                return "arrives", None  # "Tobin steps inside", "Maren comes over"
            if (
                base == "come"
                and not _distant(front + rest)
                and not _has_place(rest, self.here)
                and _word_at(rest, 0) not in ("back", "home", "from", "away", "out")
            ):
                return "arrives", None
            if base in lx.ON_FOOT and (
                _word_at(rest, 0) in ("away", "off", "home")
                or (_word_at(rest, 0) == "out" and not _has_place(rest))
                or (_word_at(rest, 0) == "back" and _word_at(rest, 1) in ("home", ""))
            ):
                dest = _place_after(rest, ("to", "for", "toward", "towards"), self.gaz)
                return "leaves", dest
            return None
        if base in lx.ENTER:
            target = _direct_place(rest, self.gaz)
            if target is not None:
                return "moves", target
            if base == "enter" and not player and not rest:
                return "arrives", None
            return None
        if base in lx.LEAVE:
            if player:
                return None
            if not rest or rest[0].kind == "punct" or rest[0].kind == "you" and len(rest) == 1:
                return "leaves", None
            if rest[0].kind == "word" and (
                rest[0].low
                in ("for", "again", "without", "at", "with", "quickly", "now", "then", "too")
                or _adverb(rest[0].low)
            ):
                dest = _place_after(rest, ("for", "to"), self.gaz)
                return "leaves", dest
            if rest[0].kind == "ent" and rest[0].ekind == "place":
                if rest[0].eid == self.here:
                    dest = _place_after(rest[1:], ("for", "to"), self.gaz)
                    return "leaves", dest
                return None
            if base in ("disappear", "vanish") and not rest:
                return "leaves", None
            if base in ("disappear", "vanish"):
                target = _place_after(rest, ("into", "inside"), self.gaz)
                if target is not None:
                    return "moves", target
            return None
        return None

    def _items(self, base: str, rest: list[Tok], add) -> None:  # noqa: ANN001
        """Claims about items: handed over, taken, dropped, put down, held or used."""
        item = _direct_item(rest)
        with_item = _with_item(rest)
        if base in lx.GIVE:
            recipient, thing = _give_objects(rest, self)
            if thing is not None:
                if recipient is not None:
                    add("gives", object=thing, other=recipient)
                else:
                    add("uses", object=thing)
                return
        if base in lx.TAKE or (base == "get" and item is not None):
            if base == "pick" and not any(t.low == "up" for t in rest[:4] if t.kind == "word"):
                item = None
            if item is not None:
                source = _person_after(rest, ("from",), self)
                add("takes", object=item, other=source)
                return
        if base in lx.DROP and item is not None:
            add("drops", object=item)
            return
        if base in lx.PUT and item is not None:
            after = (
                rest[_index_of(rest, _item_tok(rest, item)) + 1 :] if _item_tok(rest, item) else []
            )
            words = [t for t in after if t.kind != "punct"][:3]
            if words and words[0].kind == "word" and words[0].low in ("down", "aside"):
                add("drops", object=item)
                return
            if (
                len(words) >= 2
                and words[0].kind == "word"
                and words[0].low in ("in", "into", "inside")
                and words[1].kind == "you"
            ):
                add("uses", object=item)
                return
            if (
                words
                and words[0].kind == "word"
                and words[0].low in ("on", "in", "into", "onto", "beside", "by", "against", "under")
            ):
                add("drops", object=item)
                return
            add("uses", object=item)
            return
        if base in lx.LEAVE and item is not None:
            keeper = _person_after(rest, ("with",), self)
            if keeper is not None:  # "you leave the key with Tobin": his to keep
                add("gives", object=item, other=keeper)
            else:
                add("drops", object=item)
            return
        if (base in lx.USE or base in lx.OFFER or base in lx.GIVE) and item is not None:
            add("uses", object=item)
            return
        if base in lx.KEEP_GRIP or _grip_lemma(base):
            gripped = _grip_object(rest)  # "keeps a firm grip on the key"
            if gripped is not None:
                add("uses", object=gripped)
                return
        if with_item is not None:
            add("uses", object=with_item)


_GROUP_PHRASES = {
    ("both", "of", "them"): 2,
    ("all", "of", "them"): None,
    ("the", "two", "of", "them"): 2,
    ("the", "pair", "of", "them"): 2,
}


_NOT_PLURAL = frozenset(
    "is was has does his hers its this thus as us yes always perhaps towards afterwards "
    "backwards across unless whereas besides sometimes ours yours theirs less".split()
)


def _plural_noun(word: str) -> bool:
    """A word that may be a plural noun ("gulls", "boats"): ends in -s, is no verb the
    lexicon knows and no closed word."""
    return (
        len(word) > 3
        and word.endswith("s")
        and not word.endswith(("ss", "'s"))
        and word not in _NOT_PLURAL
        and lx.lemma(word) is None
    )


def _group_span(toks: list[Tok], i: int) -> tuple[int, int | None] | None:
    """(index after, how many it says or None) for a subject that means several named
    people at once: "they" with "both" or "all" before its verb ("they both", "they are
    all"), "both of them", "the two of them"."""
    word = _word_at(toks, i)
    if word == "they":
        near = [_word_at(toks, k) for k in range(i + 1, i + 4)]
        if "both" in near:
            return i + 1, 2
        if "all" in near[:2]:
            return i + 1, None
        return None
    for phrase, size in _GROUP_PHRASES.items():
        if all(_word_at(toks, i + n) == w for n, w in enumerate(phrase)):
            return i + len(phrase), size
    return None


def _participle(toks: list[Tok]) -> bool:
    """A phrase that opens with a verb in -ing ("Gripping the brass key, …")."""
    if not toks or toks[0].kind != "word":
        return False
    found = lx.lemma(toks[0].low)
    return found is not None and found[1] == "ing"


def _cue_mood(base: str) -> str:
    if base in lx.MEMORY_CUES:
        return "remembered"
    if base in lx.REPORT_CUES:
        return "reported"
    return "thought"


def _with_mood(claim: Claim, mood: str) -> Claim:
    return Claim(**{**claim.__dict__, "mood": mood})


def _mood(sv: _SV, asked: bool, words: list[Tok]) -> str:
    if sv.frame in ("thought", "remembered", "reported"):
        return sv.frame
    if asked:
        return "asked"
    if sv.frame == "conditional" or "conditional" in sv.group.moods:
        return "conditional"
    if "planned" in sv.group.moods or sv.frame == "planned":
        return "planned"
    if "negated" in sv.group.moods:
        return "negated"
    if sv.group.tense == "past":
        return "past"
    text = " " + " ".join(t.low for t in words if t.kind == "word") + " "
    if any(f" {p} " in text for p in lx.PAST_PHRASES) or any(
        t.kind == "word" and t.low in lx.PAST_CUES - {"once", "before", "used", "earlier"}
        for t in words
    ):
        return "past"
    if any(f" {p} " in text for p in lx.PLAN_PHRASES) or any(
        t.kind == "word" and t.low in lx.PLAN_WORDS for t in words
    ):
        return "planned"
    if any(
        t.kind == "word"
        and (t.low in ("no", "never", "nobody", "nothing", "not") or t.low.endswith("n't"))
        for t in words[:2]
    ):
        return "negated"
    return "asserted"


def _act_category(base: str, rest: list[Tok]) -> str:
    if base in lx.SPEECH:
        return "speak"
    if base in lx.MOTION | lx.ENTER | lx.ARRIVE | lx.LEAVE:
        return "move"
    if base in lx.GIVE | lx.OFFER | lx.TAKE | lx.DROP | lx.PUT | lx.USE | lx.KILL:
        return "use"
    if base in lx.REST or base in ("lie", "slump", "sprawl"):
        return "rest"
    return "act"


def _falls_asleep(base: str, rest: list[Tok]) -> bool:
    first, second = _word_at(rest, 0), _word_at(rest, 1)
    if base == "fall" and first == "asleep":
        return True
    if base in ("drift", "doze", "nod") and first == "off":
        return True
    if base == "go" and first == "to" and second == "sleep":
        return True
    return False


def _said_plainly(after: list[Tok], gaz: Gazetteer) -> bool:
    """Whether what follows "dead" or "asleep" leaves it plain: the clause ends, or names
    where ("dead on the quay") — not "dead drunk", "dead to the world", "asleep on his feet"."""
    k = 0
    while k < len(after) and after[k].kind == "word" and _adverb(after[k].low):
        k += 1
    if k >= len(after) or after[k].kind == "punct":
        return True
    return _word_at(after, k) in lx.LOCATIVE_PREPS and _place_at(after, k + 1, gaz) is not None


def _passes_out(base: str, rest: list[Tok]) -> bool:
    first = _word_at(rest, 0)
    return (
        (base, first) in lx.PASS_OUT
        or (base == "fall" and first == "unconscious")
        or (base == "lose" and first == "consciousness")
    )


def _place_at(toks: list[Tok], k: int, gaz: Gazetteer) -> tuple[str, int] | None:
    """The place named at `k`, allowing "the top of", "the door of" before it."""
    if (
        k < len(toks)
        and toks[k].kind == "ent"
        and toks[k].ekind == "place"
        and toks[k].eid
        and not toks[k].poss
    ):
        return toks[k].eid, k
    if (
        k < len(toks)
        and toks[k].kind == "ent"
        and toks[k].ekind == "place"
        and toks[k].eid
        and toks[k].poss
        and _word_at(toks, k + 1) not in lx.NOT_THERE
    ):
        # "the lighthouse's lantern room": still the lighthouse (its shadow is not)
        return toks[k].eid, k
    j = k
    if j < len(toks) and toks[j].kind == "word" and toks[j].low in ("the", "a", "its"):
        j += 1
        for _ in range(2):  # "the narrow gallery of the lighthouse"
            if _word_at(toks, j) not in lx.PART_OF and _describes(_word_at(toks, j)):
                j += 1
    if j < len(toks) and toks[j].kind == "word" and toks[j].low in lx.PART_OF:
        if _word_at(toks, j + 1) == "of":
            return _place_at(toks, j + 2, gaz)
    return None


def _place_within(toks: list[Tok], k: int, gaz: Gazetteer) -> tuple[str, int] | None:
    """After "inside", "within", "into": any room "of" a place is in it ("inside the
    lantern room of the lighthouse")."""
    found = _place_at(toks, k, gaz)
    if found is not None:
        return found
    for j in range(k, min(k + 5, len(toks))):
        if toks[j].kind != "word":
            return None
        if toks[j].low == "of":
            return _place_at(toks, j + 1, gaz)
    return None


@lru_cache(maxsize=32)
def _split_preps(preps: tuple[str, ...]) -> list[list[str]]:
    return sorted((p.split() for p in preps), key=len, reverse=True)


def _place_after(
    toks: list[Tok], preps: tuple[str, ...], gaz: Gazetteer, skip_people: bool = False
) -> str | None:
    """The place after the first of `preps` that names one ("into the lighthouse",
    "at the top of the lighthouse")."""
    multi = _split_preps(preps)
    for k in range(len(toks)):
        for words in multi:
            if all(_word_at(toks, k + n) == w for n, w in enumerate(words)):
                find = _place_within if words[-1] in ("inside", "within", "into") else _place_at
                found = find(toks, k + len(words), gaz)
                if found is not None:
                    return found[0]
                break
        if toks[k].kind == "punct" and toks[k].low in (",",) and not skip_people:
            continue
    return None


def _direct_place(rest: list[Tok], gaz: Gazetteer) -> str | None:
    for k, tok in enumerate(rest[:3]):
        if tok.kind == "ent":
            return tok.eid if tok.ekind == "place" else None
        if tok.kind != "word" or tok.low not in ("the", "at", "last", "finally", "inside"):
            found = _place_at(rest, k, gaz)
            return found[0] if found else None
    return None


def _leading(rest: list[Tok]) -> list[Tok]:
    """The words after a verb from its first preposition on, when nothing but particles
    and adverbs come before it; else nothing (an object comes first)."""
    for k, tok in enumerate(rest):
        if tok.kind == "word" and tok.low in lx.LOCATIVE_PREPS | {"top"}:
            return rest[k:]
        if tok.kind != "word" or not (tok.low in lx.PARTICLES or _adverb(tok.low)):
            return []
    return []


def _from_within(rest: list[Tok], gaz: Gazetteer, here: str | None) -> bool:
    """ "from the altar", "from the far end of the docks" (the docks being here): one
    comes over from a spot inside the place one is in, so one was here all along."""
    for k, tok in enumerate(rest):
        if tok.kind != "word" or tok.low != "from":
            continue
        j = k + 1
        if _word_at(rest, j) not in ("the", "its"):
            return False
        j += 1
        while _word_at(rest, j) in ("far", "back", "other") or (
            _word_at(rest, j) not in lx.WITHIN_PARTS and _describes(_word_at(rest, j))
        ):
            j += 1
        if _word_at(rest, j) not in lx.WITHIN_PARTS:
            return False
        if _word_at(rest, j + 1) != "of":
            return True
        found = _place_at(rest, j + 2, gaz)
        return found is not None and found[0] == here
    return False


def _away_from(toks: list[Tok]) -> bool:
    """ "away from", "far from": the place after "from" is where one is not."""
    return any(
        t.kind == "word" and t.low == "from" and _word_at(toks, k - 1) in lx.AWAY
        for k, t in enumerate(toks)
    )


def _has_place(toks: list[Tok], but: str | None = None) -> bool:
    """Whether the words name a place (other than `but`)."""
    return any(t.kind == "ent" and t.ekind == "place" and t.eid != but for t in toks)


def _distant(toks: list[Tok]) -> bool:
    words = [t.low for t in toks if t.kind in ("word", "you", "pron", "ent")]
    text = " " + " ".join(words) + " "
    if any(t.kind == "word" and t.low in lx.ELSEWHERE_MARKERS for t in toks):
        return True
    return any(f" {p} " in text for p in lx.ELSEWHERE_PHRASES)


def _here_words(rest: list[Tok]) -> bool:
    text = " " + " ".join(t.low for t in rest if t.kind != "punct") + " "
    return any(text.startswith(f" {w} ") or f" still {w} " in text[:20] for w in lx.HERE_WORDS)


_NOT_THIS_ONE = frozenset({"his", "her", "their", "its", "a", "an"})
"""Determiners that make an item's name mean another one ("his key", "a key")."""


def _item(tok: Tok) -> str | None:
    """The item a name token names, unless its determiner says it is some other one."""
    if tok.kind == "ent" and tok.ekind == "item" and tok.eid and tok.det not in _NOT_THIS_ONE:
        return tok.eid
    return None


def _direct_item(rest: list[Tok]) -> str | None:
    """The item a verb acts on: right after it, past particles, an indirect object and
    at most two plain words ("turn the old brass key"); never after a preposition."""
    gap = 0
    for tok in rest:
        if tok.kind == "ent":
            if tok.ekind in ("person", "player"):
                continue  # "hands Maren the key", "Tobin's brass key"
            return _item(tok)
        if tok.kind == "you":  # "hands you the key", "your tools"
            continue
        if tok.kind in ("punct", "quote"):
            return None
        if tok.low in lx.PARTICLES or tok.low in ("the", "a", "an"):
            continue
        if tok.low in lx.LOCATIVE_PREPS or tok.low in (
            "with",
            "to",
            "for",
            "of",
            "and",
            "at",
            "as",
        ):
            return None
        gap += 1
        if gap > 2:
            return None
    return None


_GRIP_STATES = frozenset("tight tightly firm firmly white hard fast".split())
_GRIP_ENDINGS = (
    ("", "present"),
    ("s", "present"),
    ("es", "present"),
    ("ed", "past"),
    ("d", "past"),
)


def _grip_form(word: str) -> tuple[str, str, str] | None:
    """(base, ending, tense) for a form of a verb of closing a hand: close, closes,
    clenches, closed, wrapped."""
    for ending, tense in _GRIP_ENDINGS:
        if not word.endswith(ending):
            continue
        base = word[: len(word) - len(ending)]
        if ending == "ed" and len(base) > 2 and base[-1] == base[-2]:
            base = base[:-1]  # wrapped, clamped
        if base in lx.GRIP_VERBS:
            return base, ending, tense
    return None


def _grip_lemma(base: str) -> bool:
    """Whether a lemma is a verb of closing a hand ("clenche": an -s form `lemma` guessed)."""
    return base in lx.GRIP_VERBS or (base.endswith("e") and base[:-1] in lx.GRIP_VERBS)


def _held_after(toks: list[Tok], k: int, after_verb: bool = False) -> tuple[str, int] | None:
    """(item, index after it) for "on the key" at `k` (after a verb also "wrapped tight
    around the brass key"): what a grip or a hand is on."""
    for _ in range(2 if after_verb else 0):
        word = _word_at(toks, k)
        if word and word not in lx.HOLDING_PREPS and (word in _GRIP_STATES or _grip_form(word)):
            k += 1
    if _word_at(toks, k) not in lx.HOLDING_PREPS or k + 1 >= len(toks):
        return None
    item = _item(toks[k + 1])
    return (item, k + 2) if item is not None else None


def _grip_verb(toks: list[Tok], j: int, plural: bool) -> VerbGroup | None:
    """ "fingers close", "her hand closes", "his knuckles whitened": a verb of closing a
    hand the lexicon's `lemma` does not know, agreeing with its noun."""
    found = _grip_form(_word_at(toks, j))
    if found is None:
        return None
    base, ending, tense = found
    if tense == "present" and (ending == "") != plural:
        return None
    return VerbGroup(j, j + 1, base, tense, text=toks[j].text)


def _in_hand_at(toks: list[Tok], k: int) -> tuple[Tok, int] | None:
    """(whose, index after) for "in Maren's hand", "in your fist", "from the keeper's
    fingers" at `k`."""
    if _word_at(toks, k) not in ("in", "within", "from", "between"):
        return None
    if k + 2 >= len(toks):
        return None
    whose, part = toks[k + 1], toks[k + 2]
    if not whose.poss or whose.kind not in ("ent", "you"):
        return None
    if whose.kind == "ent" and whose.ekind not in ("person", "player"):
        return None
    if part.kind != "word" or not (part.low in lx.HOLDING_PARTS or part.low in lx.GRIP_NOUNS):
        return None
    return whose, k + 3


def _grip_object(rest: list[Tok]) -> str | None:
    """The item of "keeps a firm grip on the key", "closes her hand around the key": a
    grip or a hand of the subject's own (a, an, her, his, their, your), then on it."""
    k = 0
    while _word_at(rest, k) and _adverb(_word_at(rest, k)):
        k += 1
    if k < len(rest) and rest[k].kind == "you" and rest[k].low == "your":
        k += 1
    elif _word_at(rest, k) in ("a", "an", "her", "his", "their"):
        k += 1
    else:
        return None
    for j in range(k, min(k + 3, len(rest))):
        word = _word_at(rest, j)
        if not word:
            return None
        if word in lx.GRIP_NOUNS or word in lx.HOLDING_PARTS:
            found = _held_after(rest, j + 1, after_verb=True)
            return found[0] if found is not None else None
    return None


def _item_tok(rest: list[Tok], item: str) -> Tok | None:
    return next((t for t in rest if t.kind == "ent" and t.eid == item), None)


def _with_item(rest: list[Tok]) -> str | None:
    for k, tok in enumerate(rest):
        if tok.kind == "word" and tok.low == "with":
            for nxt in rest[k + 1 : k + 4]:
                if nxt.kind == "ent":
                    return _item(nxt)
                if nxt.kind == "punct":
                    break
    return None


def _first_person(rest: list[Tok], reader: _Reader) -> str | None:
    for tok in rest[:3]:
        if tok.kind in ("ent", "you") and not tok.poss:
            return reader._resolve(tok)
        if tok.kind == "punct":
            return None
    return None


def _person_after(rest: list[Tok], preps: tuple[str, ...], reader: _Reader) -> str | None:
    for k, tok in enumerate(rest):
        if tok.kind == "word" and tok.low in preps and k + 1 < len(rest):
            nxt = rest[k + 1]
            if nxt.kind in ("ent", "you"):
                return reader._resolve(nxt)
    return None


def _give_objects(rest: list[Tok], reader: _Reader) -> tuple[str | None, str | None]:
    """(recipient, item) of a handing-over: "hands you the key", "gives the key to
    Maren", "presses the key into your hand"."""
    recipient = None
    item = None
    for k, tok in enumerate(rest[:8]):
        if tok.kind in ("punct", "quote"):
            break
        if (
            tok.kind in ("you", "ent")
            and not tok.poss
            and tok.ekind in ("player", "person")
            and item is None
        ):
            if tok.kind == "you" and tok.low != "you":
                continue
            recipient = reader._resolve(tok)
            continue
        if tok.kind == "ent" and tok.ekind == "item" and tok.eid:
            item = _item(tok)
            if item is None:  # "his key": some other key
                return None, None
            tail = rest[k + 1 : k + 6]
            to = _person_after(tail, ("to",), reader)  # "…to Maren", "…back to Maren"
            if to is not None:
                recipient = to
            elif (  # "…into your hand", "…into Maren's palm"
                len(tail) >= 2
                and _word_at(tail, 0) in ("into", "in")
                and tail[1].kind in ("you", "ent")
                and tail[1].poss
            ):
                recipient = reader._resolve(tail[1]) if tail[1].kind == "ent" else PLAYER_ID
            break
        if tok.kind == "word" and tok.low in lx.LOCATIVE_PREPS | {"with", "for", "of"}:
            break
    return recipient, item


def read_claims(text: str, document: Document, rules: Rules) -> list[Claim]:
    """Every claim the narration makes, in the order it makes them."""
    if PLAYER_ID not in document.entities:
        return []
    return _Reader(document, rules).read(text)


def named(text: str, document: Document, rules: Rules, kind: str) -> set[str]:
    """The entities of `kind` (player | person | place | item) that `text` names plainly:
    a name or alias that means one entity only."""
    gaz = gazetteer(document, rules)
    if gaz.pattern is None:
        return set()
    found = (
        gaz.forms.get(" ".join(m.group("name").casefold().split()), ())
        for m in gaz.pattern.finditer(text)
    )
    return {ids[0] for ids in found if len(ids) == 1 and gaz.kinds.get(ids[0]) == kind}
