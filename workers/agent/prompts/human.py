"""What the agent is told when its job may ask a human for help (``options.allow_human``); without it,
the navigator's and planner's rules stand: a captcha or a sign-in wall ends the task honestly."""

HUMAN_ALLOWED = """
A human can help with this job. Where the task needs what you cannot or must not do alone (a captcha \
or "verify you are human" page, a second factor's code sent by SMS or e-mail, a confirmation the task \
requires, such as approving a payment), use request_human with a short reason saying what the human \
should do, instead of giving up or trying to get around it. The job waits for them; then you see the \
page again, and a code they send is given to you as a placeholder to type. Ask only for that step, \
never for the whole task, and never put a password or a code in the reason."""


def human_note(allowed: bool) -> str:
    return HUMAN_ALLOWED if allowed else ""
