"""talekeeper: a local-first interactive storytelling engine.

A language model narrates; the application owns the truth of the story.
"""

__version__ = "0.1.0"
