"""The terminal front end (`talekeeper play`): a rich play loop over the same services the web uses.

`loop` reads a line, plays a turn or dispatches a command and prints the story; `tree`
holds the commands that move around the story tree (undo, takes, lines, Save Points).
"""

from talekeeper.terminal.loop import console, play, ready_lines, show_model, show_ready, warm_up

__all__ = ["console", "play", "ready_lines", "show_model", "show_ready", "warm_up"]
