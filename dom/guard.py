"""Guardrails on page text bound for a model (Nanobrowser's idea, with our own patterns).

The nonce wrapper tells the model where page text starts and ends; this goes further for text
that would be dangerous to take in even as data:

* phrases that try to replace the user's task ("ignore previous instructions", "your new task
  is", and their common forms in Spanish, French, German, Italian, Portuguese, Dutch, Russian,
  Chinese and Japanese) are flagged in place, so the model sees that the page tried, not the order
  itself. They are looked for in a *folded* copy of the text (``_Folded``), because a model reads
  through spellings a pattern would not: compatibility forms (full-width, mathematical letters) and
  accents undone, invisible format characters (zero-width spaces and joiners, soft hyphens, bidi
  controls) dropped, tag characters read as the ASCII they mirror (invisible, yet some models read
  them), and Cyrillic and Greek look-alikes of Latin letters read as Latin ("іgnоre" with Cyrillic
  і and о). The flag replaces the phrase's span in the original text;
* payment card numbers (checked with Luhn's sum, so prices and phone numbers pass), US social
  security numbers and credential-looking strings (``password: …``, API keys and tokens of the
  well-known shapes, private key blocks, bearer tokens, JWTs) are redacted, so a page cannot get
  them into the model's context, its memory, or the job's result.

``sanitize`` returns the text and what it found, for logs and counting.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass

import re2

OVERRIDE_MARK = "[flagged: text trying to change the task]"
CARD_MARK = "[redacted card number]"
SSN_MARK = "[redacted SSN]"
CREDENTIAL_MARK = "[redacted credential]"

_OVERRIDE = re2.compile(  # RE2: linear time however many phrases and languages (Python's re was 2.5x slower per page)
    r"(?i)\b(?:ignore|disregard|forget|override|bypass)\s+(?:all\s+|any\s+|the\s+|your\s+|my\s+|every\s+)*"
    r"(?:previous|prior|above|earlier|preceding|former|original|system|existing)?\s*"
    r"(?:instructions?|prompts?|directions?|rules?|tasks?|guidelines?|commands?)\b"
    r"|\b(?:your|the)\s+(?:new|real|actual|updated|true)\s+(?:task|instructions?|goal|objective|mission)\s+(?:is|are)\b"
    r"|\bnew\s+(?:instructions?|task)\s*:"
    r"|\bsystem\s+(?:prompt|message|instructions?)\s*:"
    r"|\byou\s+are\s+now\s+(?:a|an|in|the)\b"
    # Spanish, Portuguese, Italian (accents are folded away before matching)
    r"|\b(?:ignora|ignore|ignorar|olvida|olvide|esquece|esqueca|dimentica)\s+(?:todas\s+|todos\s+|tutte\s+)?"
    r"(?:las|los|as|os|le)\s+(?:instrucciones|instrucoes|istruzioni|reglas|regras|regole)\b"
    r"|\b(?:tu|su|sua|seu|la\s+tua)\s+(?:nueva|nova|verdadera|vera)\s+(?:tarea|tarefa|compito)\s+(?:es|e)\b"
    # French
    r"|\b(?:ignore[zr]?|oublie[zr]?)\s+(?:toutes\s+|tous\s+)?(?:les\s+|vos\s+|tes\s+)?(?:instructions|consignes|regles)\b"
    r"|\b(?:ta|votre)\s+(?:nouvelle|vraie|veritable)\s+(?:tache|mission)\s+est\b"
    # German
    r"|\b(?:ignoriere|ignorieren\s+sie|vergiss|vergessen\s+sie)\s+(?:alle\s+)?(?:vorherigen\s+|bisherigen\s+|obigen\s+)?"
    r"(?:anweisungen|instruktionen|regeln|befehle)\b"
    r"|\b(?:deine|ihre)\s+(?:neue|wahre|eigentliche)\s+aufgabe\s+ist\b"
    # Dutch
    r"|\b(?:negeer|vergeet)\s+(?:alle\s+)?(?:vorige\s+|eerdere\s+)?(?:instructies|regels|opdrachten)\b"
    # Russian (Cyrillic: matched on the copy that keeps its letters, see _Folded)
    r"|(?:игнорируй|игнорируйте|забудь|забудьте)\s+(?:все\s+)?(?:предыдущие\s+|прежние\s+)?(?:инструкции|указания|правила)"
    r"|(?:твоя|ваша)\s+(?:новая|настоящая)\s+задача"
    # Chinese, Japanese
    r"|(?:忽略|无视|忘记|忽視|無視)(?:之前|以上|先前|上面|前面|所有)?(?:的)?(?:所有)?(?:指令|指示|说明|說明|规则|規則)"
    r"|你的(?:新|真正的?)任务是"
    r"|(?:以前|前|上記|これまで)の(?:すべての)?(?:指示|命令|ルール)を(?:無視|忘れ)"
)

_LOOKALIKES = str.maketrans({  # Cyrillic and Greek letters drawn like Latin ones (Unicode's confusables)
    "а": "a", "в": "b", "е": "e", "ё": "e", "к": "k", "м": "m", "н": "h", "о": "o", "р": "p", "с": "c",
    "т": "t", "у": "y", "х": "x", "ѕ": "s", "і": "i", "ї": "i", "ј": "j", "ԁ": "d", "һ": "h", "ԛ": "q",
    "ԝ": "w", "ɡ": "g", "ı": "i", "α": "a", "β": "b", "ε": "e", "ι": "i", "κ": "k", "ν": "v", "ο": "o",
    "ρ": "p", "τ": "t", "υ": "u", "χ": "x", "γ": "y", "ω": "w",
})


TAG_FIRST, TAG_LAST, TAG_OFFSET = 0xE0020, 0xE007E, 0xE0000  # Unicode's tag characters mirror ASCII
_RUNS = re.compile(r"[\x00-\x7f]+|[^\x00-\x7f]", re.DOTALL)


@functools.lru_cache(maxsize=4096)
def _fold(ch: str) -> tuple[tuple[str, str], ...]:
    """What one non-ASCII character reads as: (plain, latin) per character it expands to; none if invisible."""
    if TAG_FIRST <= ord(ch) <= TAG_LAST:  # "ASCII smuggling": tag characters some models read as text
        return ((chr(ord(ch) - TAG_OFFSET),) * 2,)
    if unicodedata.category(ch) == "Cf":
        return ()
    folded = []
    for out in unicodedata.normalize("NFKC", ch):
        base = "".join(c for c in unicodedata.normalize("NFD", out) if not unicodedata.combining(c))
        folded.append((out, (base[:1] or out).lower().translate(_LOOKALIKES)))
    return tuple(folded)


class _Folded:
    """A copy of ``text`` as a reader sees it, and where each of its characters came from.

    ``plain`` undoes compatibility forms (NFKC) and drops invisible format characters; ``latin``
    also drops accents and reads look-alike letters as Latin (so "іgnоre" is "ignore", while
    Russian words, all Cyrillic, are matched in ``plain``). ``origin`` maps a span of either copy
    back to the original text (both copies have one character per kept original character's output).
    """

    def __init__(self, text: str) -> None:
        plain: list[str] = []
        latin: list[str] = []
        self.origin: list[int] = []
        for run in _RUNS.finditer(text):  # ASCII runs go through whole; others a character at a time
            i, chunk = run.start(), run.group()
            if chunk.isascii():
                plain.append(chunk)
                latin.append(chunk.lower())
                self.origin.extend(range(i, run.end()))
                continue
            for out_plain, out_latin in _fold(chunk):
                plain.append(out_plain)
                latin.append(out_latin)
                self.origin.append(i)
        self.plain, self.latin = "".join(plain), "".join(latin)

    def span(self, start: int, end: int) -> tuple[int, int]:
        return self.origin[start], self.origin[end - 1] + 1


def _override_spans(text: str) -> list[tuple[int, int]]:
    """Where in ``text`` an override phrase stands, in whatever spelling, merged."""
    if text.isascii():  # nothing to fold: the common case, kept fast
        return [m.span() for m in _OVERRIDE.finditer(text)]
    folded = _Folded(text)
    spans = sorted(folded.span(*m.span()) for copy in (folded.plain, folded.latin)
                   for m in _OVERRIDE.finditer(copy) if m.end() > m.start())
    merged: list[tuple[int, int]] = []
    for start, end in spans:
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
        else:
            merged.append((start, end))
    return merged


def _flag_overrides(text: str, found: list[str]) -> str:
    spans = _override_spans(text)
    if not spans:
        return text
    found.append("task_override")
    parts, last = [], 0
    for start, end in spans:
        parts += [text[last:start], OVERRIDE_MARK]
        last = end
    return "".join(parts) + text[last:]


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

# Necessary conditions, cheap to test, for the patterns above: each pattern begins with a
# look-around or ``\b``, which keeps Python's ``re`` from skipping ahead to a possible start, so
# it tries every alternative at every position (about half a microsecond a character: most of
# the cost of sending a small page's element list). A text without any of these cannot match, and
# the pattern itself decides whenever one is there.
# ``_KEY_SHAPES`` without its leading word boundaries: every alternative holds one of these literals.
_KEY_HINT = re.compile(r"-----BEGIN |sk-|AKIA|ASIA|gh[pousr]_|xox[abprs]-|AIza|eyJ|Bearer\s")
# One literal of each of ``_KEY_HINT``'s alternatives, searched in C before it (the alternation
# without a common first character is itself tried at every position).
_KEY_LITERALS = ("-----BEGIN ", "sk-", "AKIA", "ASIA", "_", "xox", "AIza", "eyJ", "Bearer")
# ``_LABELLED_SECRET``'s names, each held by one of these words. Case is ignored the way ``re``
# ignores it: lower case, plus the letters ``re`` also takes for i and s (dotted capital I,
# dotless i, long s), which ``str.lower`` leaves or turns into two characters.
_SECRET_WORDS = ("pass", "pwd", "secret", "key", "token")
_RE_CASE_FOLD = str.maketrans({"\u0130": "i", "\u0131": "i", "\u017f": "s"})
# ``_CARD`` without its look-arounds: it starts with a digit, so ``re`` skips ahead to one.
_CARD_HINT = re.compile(r"\d(?:[ -]?\d){12}")
# ``_SSN`` needs a hyphen between digits.
_SSN_HINT = re.compile(r"\d-\d")


def _may_hold_key(text: str) -> bool:
    return any(literal in text for literal in _KEY_LITERALS) and _KEY_HINT.search(text) is not None


def _may_hold_labelled_secret(text: str) -> bool:
    folded = (text if text.isascii() else text.translate(_RE_CASE_FOLD)).lower()
    return any(word in folded for word in _SECRET_WORDS)


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

    text = _flag_overrides(text, found)
    if _may_hold_key(text):
        text = _KEY_SHAPES.sub(mark("credential", CREDENTIAL_MARK), text)
    if _may_hold_labelled_secret(text):
        text = _LABELLED_SECRET.sub(labelled, text)
    if _CARD_HINT.search(text):
        text = _CARD.sub(card, text)
    if "-" in text and _SSN_HINT.search(text):
        text = _SSN.sub(mark("ssn", SSN_MARK), text)
    return Sanitized(text, tuple(dict.fromkeys(found)))
