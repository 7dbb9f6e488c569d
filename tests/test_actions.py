import pytest

from talekeeper.story.actions import ActionError, format_action, normalise_action


@pytest.mark.parametrize(
    ("kind", "text", "line"),
    [
        ("do", "open the door", "> You open the door."),
        ("do", "You open the door!", "> You open the door!"),
        ("do", "I draw my sword", "> You draw your sword."),
        ("do", "I pick up my bag", "> You pick up your bag."),
        ("do", "Look around.", "> You look around."),
        ("do", "look around", "> You look around."),
        ("do", "i hide behind the crates", "> You hide behind the crates."),
        ("do", "I am tired, so I sit down", "> You are tired, so you sit down."),
        ("do", "I'm hungry", "> You're hungry."),
        ("do", "I’ll wait for Maren", "> You’ll wait for Maren."),
        (
            "do",
            "hand Maren my map and ask her to help me",
            "> You hand Maren your map and ask her to help you.",
        ),
        (
            "do",
            "stand by myself; the sword is mine",
            "> You stand by yourself; the sword is yours.",
        ),
        (
            "do",
            'tell Maren "I saw my brother" and leave',
            '> You tell Maren "I saw my brother" and leave.',
        ),
        ("do", "Read the NPC list", "> You read the NPC list."),
        ("do", "NPC check", "> You NPC check."),
        ("do", "you", ""),
        ("do", "mine the iron vein", "> You mine the iron vein."),
        ("say", "hello there", '> You say "Hello there."'),
        ("say", "Hello", '> You say "Hello."'),
        ("say", '"Who goes there?"', '> You say "Who goes there?"'),
        ("story", "The sky darkens", "The sky darkens."),
        ("story", "maren laughs.", "Maren laughs."),
        ("story", '"run!" she cries', '"Run!" she cries.'),
        ("continue", "", ""),
        ("opening", "", ""),
        # Only the Latin alphabet gets the English rewrite; other scripts stay as written.
        ("do", "我坐的士去码头", "> 我坐的士去码头"),
        ("say", "你好", '> "你好"'),
        ("story", "月光城很安静", "月光城很安静"),
        ("do", "ไปที่ตลาด", "> ไปที่ตลาด"),
        ("do", "마법사를 찾는다", "> 마법사를 찾는다"),
        ("do", "élan toward the gate", "> You élan toward the gate."),
    ],
)
def test_actions_read_as_ai_dungeon_writes_them(kind: str, text: str, line: str) -> None:
    assert format_action(kind, text) == line


def test_bad_actions_are_refused_with_a_reason() -> None:
    with pytest.raises(ActionError, match="Unknown action kind"):
        normalise_action("shout", "hi")
    with pytest.raises(ActionError, match="needs some text"):
        normalise_action("do", "   ")
    with pytest.raises(ActionError, match="too long"):
        normalise_action("say", "x" * 5000)
    assert normalise_action("continue", "ignored") == ("continue", "")
