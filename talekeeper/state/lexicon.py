"""The English the narration reader knows: verbs by what they claim, and the words that
change a clause's mood.

The reader (`reader.py`) is rule-based on purpose (docs/architecture.md "Reading the
narration"): it knows the story's entities only by the names in the state document, and
English only by these lists. A verb it does not know claims nothing, so a gap here costs
recall, never precision. Each verb is listed once, in its base form; `lemma` undoes the inflections a
narration uses (hands, carries, reaches, laughing, walked, went).
"""

from __future__ import annotations

from functools import cache

# --- verbs, by what a clause with them claims -----------------------------------------

BE = frozenset({"be"})
POSTURE = frozenset(
    "stand sit wait lie kneel crouch remain stay linger lean perch huddle shelter loiter "
    "hover squat sprawl hunch".split()
)
MOTION = frozenset(
    "go walk step climb head run hurry come return cross wander stride stroll slip duck "
    "push follow ride sail row limp stumble trudge clamber descend ascend move dash race "
    "sprint march tramp edge creep sneak scramble wade swim hop jump leap squeeze troop "
    "burst storm stalk stomp amble saunter shuffle hobble lurch splash plod pad tiptoe "
    "crawl rush bolt flee make get".split()
)
"""Verbs of going: with "into/to/onto P" they take the subject to the place P."""
CARRY = frozenset(
    "carry take bring row ferry lead guide pull haul drag help lift usher steer sail pole "
    "escort show punt walk".split()
)
"""Verbs that take someone along: "Maren rows you across to the lighthouse"."""
ON_FOOT = frozenset(
    "go walk stalk stomp storm stride march hurry run rush dash bolt flee limp hobble "
    "shuffle stumble trudge amble wander stroll saunter slip head plod pad tiptoe creep "
    "sneak".split()
)
"""Going on one's own feet: "walks away", "stalks off" leave the scene. A boat pushed or
rowed off may carry the player along, so those verbs leave no one behind."""
STEP_IN = frozenset(
    "come step walk hurry stride stomp stalk burst limp shuffle hobble run rush storm amble "
    "wander stroll duck slip push".split()
)
"""Verbs that, with "in", "inside", "over" or "up" and no place, bring someone into the
scene ("Tobin steps inside", "Maren comes over")."""
WITHIN_PARTS = frozenset(
    "altar hearth fire nave pews pew corner end middle centre center bow stern rail railing "
    "kitchen cellar attic loft parlour parlor table bar counter window desk bench".split()
)
"""Spots inside a place: who comes over from one ("from the altar") was there already —
unlike a door, a gate or a porch, which one comes in through."""
ENTER = frozenset("enter reach board".split())
"""Verbs whose direct object is the place arrived at."""
ARRIVE = frozenset("arrive appear join".split())
LEAVE = frozenset("leave depart exit disappear vanish withdraw".split())
GIVE = frozenset(
    "hand give pass toss throw slide press return lend entrust deliver shove thrust".split()
)
OFFER = frozenset("offer hold show".split())
"""Verbs that handle an item without handing it over ("offers you the key")."""
TAKE = frozenset(
    "take grab snatch pocket accept receive collect seize pick retrieve pluck steal".split()
)
DROP = frozenset("drop discard abandon".split())
PUT = frozenset("set put lay place".split())
"""Drop an item when followed by "down/aside" or a place that is not the holder's."""
USE = frozenset(
    "hold grip clutch carry have turn raise lift use swing draw brandish weigh twirl fit "
    "insert polish open unroll unwrap sharpen wave shake tap thumb finger rub wipe clean "
    "fill pour jingle count test spin flip tuck wear unlock lock light strike trim mend "
    "fix oil tighten loosen unpack check clasp keep pull produce fish whip own possess cradle hug wield aim tilt twist jiggle "
    "rattle heft juggle fiddle toy fumble examine inspect unfold unseal".split()
)
SPEECH = frozenset(
    "say ask call shout whisper mutter murmur growl snap laugh chuckle sigh answer reply add "
    "tell warn grumble sing hum speak cry yell bark hiss croak rasp insist admit agree "
    "explain promise greet curse groan mumble scoff snort sneer retort repeat protest plead "
    "beg demand announce declare exclaim bellow roar scream shriek wail sob stammer stutter "
    "drawl quip joke tease mock chide scold grunt hail chatter gossip confess".split()
)
BODY_PARTS = frozenset("hand hands fingers fist fists knuckles arm arms shoulders".split())
"""What of someone acts only where they are ("the keeper's gnarled hands fumble with a
rope"): a voice or a laugh may carry from afar, a face may be a memory, boots may stand
without their owner, but hands are where their owner is."""
GRIP_NOUNS = frozenset("grip hold grasp".split())
HOLDING_PARTS = frozenset("hand hands fingers fist fists knuckles palm palms".split())
HOLDING_PREPS = frozenset("on around round".split())
"""A grip or a hand on an item is someone holding it ("Maren's grip on the key is tight",
"her fingers tighten around the key"): a possessive, one of these nouns, one of these
prepositions, the item."""
GRIP_VERBS = frozenset(
    "close tighten clench curl wrap clamp lock squeeze fasten whiten grip clutch clasp".split()
)
"""What hands do when they close on something ("your fingers close on the key") —
known here even where `lemma` does not know them, since "close" and "wrap" read as
verbs everywhere would split clauses at an adjective ("sits by the fire, close to it")."""
KEEP_GRIP = frozenset("keep have hold tighten maintain take get lose relax shift adjust".split())
"""Verbs whose object "a/her firm grip on the key" is the subject's own grip."""
PASS_OUT = frozenset({("pass", "out"), ("black", "out"), ("keel", "over")})
"""Verb and particle that knock someone out ("passes out on the quay")."""
BACK_PREPS = frozenset({"at", "in", "on", "to", "inside", "aboard"})
"""After "is back": where someone has returned to ("you're back on the quay")."""
STATE_WORDS = {
    "dead": "dead",
    "asleep": "asleep",
    "unconscious": "unconscious",
    "senseless": "unconscious",
    "awake": "awake",
}
"""A state said outright after "is" or a posture ("is asleep", "lies dead"): the status it
means (`awake`: back to the normal one)."""
STATE_INTENSIFIERS = frozenset("fast sound stone quite now already still".split())
"""Words that may come between: "fast asleep", "stone dead", "still asleep"."""
REST = frozenset("sleep snore doze slumber rest slump dream stir breathe".split())
"""What the asleep, unconscious and dead may be said to do without contradiction."""
DIE = frozenset("die perish".split())
KILL = frozenset("kill slay murder".split())
WAKE = frozenset("wake awaken awake".split())
HAVE = frozenset("have keep own possess".split())
"""Possession told as a state, not a deed: it places no one in the scene."""
PERCEIVE = frozenset(
    "see watch look stare glance gaze peer eye study notice spot observe listen hear smell "
    "feel sense".split()
)

SIGNAL = frozenset("wave signal point gesture beckon".split())
"""Verbs one does toward someone from where one is ("you wave from the docks")."""
AIMED = (
    PERCEIVE
    | SIGNAL
    | SPEECH
    | frozenset("smile grin frown glare scowl nod wink squint blink sneer".split())
)
"""Verbs whose "at" names a target, not where one is ("Maren stares at the lighthouse")."""
AWAY = frozenset("away far back home apart".split())
"""Before "from", these say the place is left or distant ("away from the lighthouse")."""

THOUGHT_CUES = frozenset(
    "think wonder imagine picture dream wish hope fear worry suspect believe guess doubt "
    "suppose expect assume realise realize forget know reckon figure".split()
)
MEMORY_CUES = frozenset("remember recall recollect".split())
REPORT_CUES = frozenset(
    "say tell claim insist swear mention explain warn report write read hear rumour "
    "whisper admit confess promise gossip".split()
)
PLAN_CUES = frozenset("plan intend mean want decide try hope need resolve prepare".split())
"""Verbs that, followed by "to", make what follows a plan or an attempt, not a deed."""

NOMINAL_CUES: dict[str, str] = {
    "according": "reported",
    "rumour": "reported",
    "rumours": "reported",
    "rumor": "reported",
    "rumors": "reported",
    "story": "reported",
    "stories": "reported",
    "tale": "reported",
    "tales": "reported",
    "legend": "reported",
    "gossip": "reported",
    "word": "reported",
    "memory": "remembered",
    "memories": "remembered",
    "remembering": "remembered",
    "thought": "thought",
    "thoughts": "thought",
    "thinking": "thought",
    "dream": "thought",
    "dreams": "thought",
    "imagining": "thought",
    "mind": "thought",
    "if": "conditional",
    "unless": "conditional",
    "whether": "conditional",
    "perhaps": "conditional",
    "maybe": "conditional",
    "probably": "conditional",
    "surely": "conditional",
    "suppose": "conditional",
    "supposing": "conditional",
    "though": None,  # "as though" is handled as a pair below
}
"""Words that frame the rest of their sentence (\"according to Maren, …\", \"in your
memory …\"). `None`: a word with no frame of its own."""
AS_IF = ("as if", "as though", "like")

NEGATIONS = frozenset(
    "not never no nobody nothing neither nor nowhere without cannot hardly barely almost "
    "nearly".split()
)
MODALS: dict[str, str] = {
    "will": "planned",
    "'ll": "planned",
    "shall": "planned",
    "would": "conditional",
    "'d": "conditional",
    "could": "conditional",
    "can": "conditional",
    "might": "conditional",
    "may": "conditional",
    "must": "conditional",
    "should": "conditional",
    "ought": "conditional",
}
AUX_PRESENT = frozenset("is are am 's 're does do has have 've".split())
AUX_PAST = frozenset("was were did had".split())
PAST_CUES = frozenset(
    "ago yesterday once formerly earlier years winters summers before used".split()
)
PAST_PHRASES = (
    "last winter",
    "last night",
    "last year",
    "last summer",
    "last spring",
    "last autumn",
    "last week",
    "long ago",
    "years ago",
    "used to",
    "back then",
    "in those days",
    "the night you left",
    "when you were",
    "when he was",
    "when she was",
    "when they were",
)
PLAN_WORDS = frozenset("tomorrow later soon tonight".split())
PLAN_PHRASES = ("going to", "about to", "on the point of", "ready to", "set out to", "set off to")

SUBORDINATE_CONDITIONAL = frozenset("if unless when whenever until before once whether".split())
"""A clause opened by one of these is not told as happening now."""
SUBORDINATE_TOLD = frozenset(
    "as while after because though although since and but then so yet".split()
)

ADVERBS = frozenset(
    "still just already then now slowly finally also suddenly quietly only even again "
    "too simply merely soon at last first gently carefully quickly softly "
    "briskly calmly silently abruptly instantly immediately swiftly wearily stiffly "
    "grudgingly reluctantly eventually promptly here there back all both himself herself "
    "themselves yourself itself".split()
)
"""Words that may sit between a subject and its verb."""
PARTICLES = frozenset(
    "up down over out back around round aside away off in inside along across forward".split()
)

ARRIVAL_PREPS = (
    "into",
    "to",
    "onto",
    "inside",
    "in to",
    "up to",
    "back to",
    "down to",
    "over to",
    "across to",
    "on to",
    "up into",
    "back into",
    "down into",
    "out to",
    "through to",
    "as far as",
    "in through",
)
"""After a verb of going, these put the subject at the place named next."""
AT_PREPS = ("at", "in", "inside", "within", "on", "atop", "upon", "aboard", "on top of")
"""After a verb of being or posture, these say where the subject is."""
PART_OF = frozenset(
    "top foot door doorway gate entrance threshold base bottom edge steps step stair "
    "stairs end heart middle centre center back front roof floor gallery balcony landing "
    "stairwell staircase cellar attic loft kitchen hearth parlour parlor porch yard "
    "courtyard garden nave altar deck bow stern rail railing platform summit interior "
    "lantern-room".split()
)
"""\"at the top of the lighthouse\": the place claimed is the one after `of`."""
NOT_THERE = frozenset(
    "shadow shadows light lights beam glow direction sight view silhouette outline lee".split()
)
"""What a place casts or shows afar: "in the lighthouse's shadow" is not in the lighthouse."""

HERE_WORDS = (
    "here",
    "with you",
    "beside you",
    "next to you",
    "at your side",
    "by your side",
    "before you",
    "in front of you",
    "behind you",
    "present",
)
ELSEWHERE_MARKERS = frozenset(
    "across far distant distance beyond window windows horizon meanwhile elsewhere "
    "home afar opposite faraway yonder".split()
)
ELSEWHERE_PHRASES = (
    "up at",
    "down at",
    "up on",
    "down on",
    "out on",
    "over on",
    "over at",
    "out at",
    "back at",
    "away at",
    "in his",
    "in her",
    "in their",
    "at his",
    "at her",
    "at their",
    "on his",
    "on her",
    "on their",
    "inside his",
    "inside her",
    "on the far",
    "in the distance",
    "far off",
    "far away",
    "off in",
)
"""A clause with one of these tells of someone seen or heard from afar, or at a place
of their own the reader cannot name: it places nobody in the scene."""

UNNAMED_PEOPLE = frozenset(
    "man woman men women boy girl child children stranger figure fisherman fishermen "
    "fisherwoman sailor sailors guard guards boatman boatmen clerk someone somebody "
    "person people crowd priest lad lass mother father dog cat".split()
)
"""Nouns for people the state does not name: while one is in play, "he"/"she" is not
resolved (it could be them)."""

LOCATIVE_PREPS = frozenset(
    "in at inside within on atop upon by beside near outside under behind beyond across "
    "from over through into onto toward towards past along".split()
)

IRREGULAR: dict[str, str] = {
    # past and participle forms → base
    "went": "go",
    "gone": "go",
    "came": "come",
    "stood": "stand",
    "sat": "sit",
    "held": "hold",
    "took": "take",
    "taken": "take",
    "gave": "give",
    "given": "give",
    "left": "leave",
    "ran": "run",
    "said": "say",
    "told": "tell",
    "drew": "draw",
    "drawn": "draw",
    "threw": "throw",
    "thrown": "throw",
    "found": "find",
    "lay": "lie",
    "lain": "lie",
    "knelt": "kneel",
    "brought": "bring",
    "caught": "catch",
    "fell": "fall",
    "fallen": "fall",
    "felt": "feel",
    "got": "get",
    "gotten": "get",
    "hid": "hide",
    "kept": "keep",
    "led": "lead",
    "lit": "light",
    "made": "make",
    "met": "meet",
    "paid": "pay",
    "rode": "ride",
    "rose": "rise",
    "saw": "see",
    "seen": "see",
    "sent": "send",
    "shook": "shake",
    "slid": "slide",
    "spoke": "speak",
    "spoken": "speak",
    "swung": "swing",
    "thought": "think",
    "tore": "tear",
    "woke": "wake",
    "woken": "wake",
    "wore": "wear",
    "wrote": "write",
    "written": "write",
    "heard": "hear",
    "knew": "know",
    "known": "know",
    "slept": "sleep",
    "died": "die",
    "dead": "dead",
    "struck": "strike",
    "stole": "steal",
    "stolen": "steal",
    "strode": "stride",
    "swam": "swim",
    "crept": "creep",
    "leapt": "leap",
    "sang": "sing",
    "sung": "sing",
    "began": "begin",
    "begun": "begin",
    "drove": "drive",
    "became": "become",
    "was": "be",
    "were": "be",
    "been": "be",
    "had": "have",
    "did": "do",
    "done": "do",
    "wept": "weep",
    "spun": "spin",
    "ground": "grind",
    "bound": "bind",
    "sought": "seek",
    "fled": "flee",
    "bore": "bear",
    "borne": "bear",
    "froze": "freeze",
    "awoke": "awake",
    "awoken": "awake",
    "dug": "dig",
    "flung": "fling",
    "hung": "hang",
    "clung": "cling",
    "slung": "sling",
}
IRREGULAR_PRESENT: dict[str, str] = {
    "is": "be",
    "are": "be",
    "am": "be",
    "'s": "be",
    "'re": "be",
    "has": "have",
    "does": "do",
    "goes": "go",
}
PAST_FORMS = frozenset(w for w in IRREGULAR if w not in ("dead", "bound", "ground", "lay"))
"""Irregular forms that are past tense. "lay" is also the base of "lay down"."""

NOT_VERBS = frozenset(
    "his hers its this thus us as is was has does yes less unless across always perhaps "
    "towards afterwards besides sometimes whereas bus gas lens glass grass moss boss "
    "loss mass pass miss kiss dress press cross chess class ourselves themselves "
    "yourselves news eaves stairs steps boots clothes oilskins tools keys hands eyes "
    "others words times ways days years nights lips teeth shoulders arms legs".split()
)
"""Words ending in -s that follow a name without being its verb ("Tobin's", "Maren, his
sister …"). `lemma` is still asked for those that are verbs too (press, cross, pass)."""

KNOWN_VERBS = (
    BE
    | POSTURE
    | MOTION
    | ENTER
    | ARRIVE
    | LEAVE
    | GIVE
    | OFFER
    | TAKE
    | DROP
    | PUT
    | USE
    | SPEECH
    | REST
    | DIE
    | KILL
    | WAKE
    | PERCEIVE
    | THOUGHT_CUES
    | MEMORY_CUES
    | REPORT_CUES
    | PLAN_CUES
    | CARRY
    | frozenset(
        "nod smile grin frown shrug blink wince flinch glare scowl wave point gesture beckon "
        "pause hesitate tremble shiver shudder bow curtsy clap weep cough spit swear "
        "squint tut frown listen begin start seem find fall rise bring catch feel hide "
        "keep lead meet pay see send shake slide think tear write know sleep strike "
        "bind seek bear freeze dig fling hang cling sling weep spin drive become do "
        "help pull haul drag carry lift knock lose".split()
    )
)


@cache
def lemma(word: str) -> tuple[str, str] | None:
    """(base form, tense) for a verb form the reader knows, else None. Tense is
    `present` (walks, walk), `past` (walked, went), `ing` (walking) or `participle`
    (gone, taken: tense from its auxiliary)."""
    w = word.casefold()
    if w in IRREGULAR_PRESENT:
        return IRREGULAR_PRESENT[w], "present"
    if w in IRREGULAR:
        base = IRREGULAR[w]
        tense = "participle" if w.endswith("n") and w not in ("ran", "began") else "past"
        return base, tense
    if w in KNOWN_VERBS:
        return w, "present"
    for suffix, repl, tense in _SUFFIXES:
        if w.endswith(suffix) and len(w) > len(suffix) + 1:
            stem = w[: -len(suffix)] + repl
            for candidate in _stems(stem, suffix):
                if candidate in KNOWN_VERBS:
                    return candidate, tense
    return None


_SUFFIXES = (
    ("ies", "y", "present"),
    ("es", "", "present"),
    ("s", "", "present"),
    ("ied", "y", "past"),
    ("ed", "", "past"),
    ("ing", "", "ing"),
)


def _stems(stem: str, suffix: str) -> tuple[str, ...]:
    """Spellings a suffix may have hidden: walk|ed, hop|ped → hop, lik|ed → like."""
    out = [stem]
    if suffix in ("ed", "ing", "es"):
        out.append(stem + "e")
        if len(stem) > 2 and stem[-1] == stem[-2]:
            out.append(stem[:-1])
    return tuple(out)


def third_person(word: str) -> bool:
    """Whether `word` can be a verb after a singular name: the -s form of any word (a
    verb the lists do not know still tells that its subject acts), or a known past."""
    w = word.casefold()
    if w in NOT_VERBS and lemma(w) is None:
        return False
    if w in IRREGULAR_PRESENT or w in PAST_FORMS:
        return True
    if not w.isalpha() or len(w) < 3:
        return False
    if w.endswith("s") and not w.endswith(("ss", "us", "is", "'s")):
        return True
    found = lemma(w)
    return found is not None and found[1] == "past"
