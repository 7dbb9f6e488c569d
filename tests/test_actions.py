import pytest

from talekeeper.story.actions import ActionError, format_action, normalise_action


@pytest.mark.parametrize(
    ("kind", "text", "line"),
    [
        ("do", "open the door", "> You open the door."),
        ("do", "You open the door!", "> You open the door!"),
        ("do", "I draw my sword", "> You draw my sword."),
        ("say", "Hello", '> You say "Hello."'),
        ("say", '"Who goes there?"', '> You say "Who goes there?"'),
        ("story", "The sky darkens", "The sky darkens."),
        ("continue", "", ""),
        ("opening", "", ""),
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
