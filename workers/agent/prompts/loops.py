"""What the navigator is told, once, when it repeats itself on a page that does not change."""

LOOP_NUDGE = """\
browserd notice: you are repeating yourself. Your last {repeats} steps repeated actions you had \
already taken on this same, unchanged page (the same element, the same scroll, or the same cycle of \
pages), and nothing changed. Do not repeat them again: try a different element or approach, or end \
the task with done (success false and what you found) if it cannot be completed. If you repeat them \
again, the job ends as stuck."""


def loop_nudge(repeats: int) -> str:
    return LOOP_NUDGE.format(repeats=repeats)
