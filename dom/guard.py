"""Guardrails on page text bound for a model (Nanobrowser's idea, with our own patterns).

The nonce wrapper tells the model where page text starts and ends; this goes further for text
that would be dangerous to take in even as data:

* phrases that try to replace the user's task ("ignore previous instructions", "your new task
  is") are flagged in place, so the model sees that the page tried, not the order itself;
* payment card numbers (checked with Luhn's sum, so prices and phone numbers pass), US social
  security numbers and credential-looking strings (``password: …``, API keys and tokens of the
  well-known shapes, private key blocks, bearer tokens, JWTs) are redacted, so a page cannot get
  them into the model's context, its memory, or the job's result.

``sanitize`` returns the text and what it found, for logs and counting.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

OVERRIDE_MARK = "[flagged: text trying to change the task]"
CARD_MARK = "[redacted card number]"
SSN_MARK = "[redacted SSN]"
CREDENTIAL_MARK = "[redacted credential]"

_OVERRIDE = re.compile(
    r"\b(?:ignore|disregard|forget|override|bypass)\s+(?:all\s+|any\s+|the\s+|your\s+|my\s+|every\s+)*"
    r"(?:previous|prior|above|earlier|preceding|former|original|system|existing)?\s*"
    r"(?:instructions?|prompts?|directions?|rules?|tasks?|guidelines?|commands?)\b"
    r"|\b(?:your|the)\s+(?:new|real|actual|updated|true)\s+(?:task|instructions?|goal|objective|mission)\s+(?:is|are)\b"
    r"|\bnew\s+(?:instructions?|task)\s*:"
    r"|\bsystem\s+(?:prompt|message|instructions?)\s*:"
    r"|\byou\s+are\s+now\s+(?:a|an|in|the)\b",
    re.IGNORECASE,
)
_CARD = re.compile(r"(?<![\d-])\d(?:[ -]?\d){12,18}(?![\d-])")
_SSN = re.compile(r"(?<![\d-])(?!000|666|9\d\d)\d{3}-(?!00)\d{2}-(?!0000)\d{4}(?![\d-])")
_LABELLED_SECRET = re.compile(
    r"\b(password|passwd|passcode|pwd|secret|api[_ -]?key|access[_ -]?token|auth[_ -]?token|private[_ -]?key)"
    r"(\s*[:=][ \t]*)(\"[^\"\n]+\"|'[^'\n]+'|[^\s,;\"']+)",
    re.IGNORECASE,
)
_KEY_SHAPES = re.compile(
    r"-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?(?:-----END [A-Z ]*PRIVATE KEY-----|$)"
    r"|\bsk-[A-Za-z0-9_-]{20,}"                # OpenAI and alike
    r"|\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"          # AWS access key ids
    r"|\bgh[pousr]_[A-Za-z0-9]{36,}\b"         # GitHub tokens
    r"|\bxox[abprs]-[A-Za-z0-9-]{10,}"         # Slack tokens
    r"|\bAIza[0-9A-Za-z_-]{35}\b"              # Google API keys
    r"|\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"  # JWTs
    r"|\bBearer\s+[A-Za-z0-9._~+/-]{20,}=*",
)


@dataclass(frozen=True)
class Sanitized:
    text: str
    findings: tuple[str, ...] = ()  # kinds found: task_override, card, ssn, credential


def luhn_ok(digits: str) -> bool:
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = int(ch)
        if i % 2:
            d = d * 2 - 9 if d > 4 else d * 2
        total += d
    return total % 10 == 0


def sanitize(text: str) -> Sanitized:
    """``text`` with override phrases flagged and sensitive values redacted."""
    found: list[str] = []

    def mark(kind: str, replacement: str) -> Callable[[re.Match[str]], str]:
        def sub(_: re.Match[str]) -> str:
            found.append(kind)
            return replacement
        return sub

    def card(match: re.Match[str]) -> str:
        digits = re.sub(r"\D", "", match.group(0))
        if 13 <= len(digits) <= 19 and luhn_ok(digits):
            found.append("card")
            return CARD_MARK
        return match.group(0)

    def labelled(match: re.Match[str]) -> str:
        found.append("credential")
        return f"{match.group(1)}{match.group(2)}{CREDENTIAL_MARK}"

    text = _OVERRIDE.sub(mark("task_override", OVERRIDE_MARK), text)
    text = _KEY_SHAPES.sub(mark("credential", CREDENTIAL_MARK), text)
    text = _LABELLED_SECRET.sub(labelled, text)
    text = _CARD.sub(card, text)
    text = _SSN.sub(mark("ssn", SSN_MARK), text)
    return Sanitized(text, tuple(dict.fromkeys(found)))
