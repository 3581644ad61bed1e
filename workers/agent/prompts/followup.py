"""The follow-up task's message (Nanobrowser's ``addFollowUpTask``): a new task in a kept history."""

FOLLOW_UP = """\
Your new ultimate task is: \"\"\"{task}\"\"\". This is a follow-up of the previous tasks: the browser is \
still where the previous task left it and the history above is what you did so far. Take all of \
the previous context into account and finish your new ultimate task; when it is achieved, use the \
done action with its answer."""


def follow_up_task(task: str) -> str:
    return FOLLOW_UP.format(task=task)
