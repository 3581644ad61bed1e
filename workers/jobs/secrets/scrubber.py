"""The one scrubber of a job's secret values: every form a page (or a log, or a URL) can echo them in
is replaced by the secret's placeholder, ``<secret>name</secret>``.

Why more than the value as written: a site echoes what it received the way its context writes
it. A GET form puts the password in the URL percent-encoded (``quote`` or ``quote_plus``, hex
digits in either case, sometimes encoded twice when a URL rides in another one's query); the
page's HTML has it entity-escaped (``&amp;``, ``&#38;``, ``&#x26;``, even every character);
a script's JSON or a log line backslash-escapes it (``\\"``, ``\\u0026``, escaped again inside
another JSON string); CSS shows the user name upper-cased; an ``Authorization: Basic`` header or
a token carries it in base64. So each secret becomes one pattern, built once per job:

* character by character, each character as itself in any case (the whole pattern is
  case-insensitive, Unicode simple case folding), or percent-encoded (its UTF-8 bytes as
  ``%HH``, any hex case, ``%25`` repeated for re-encoding; a space also as ``+``), or an HTML
  character reference (every named entity that means it, ``&#DD;`` and ``&#xHH;`` with optional
  leading zeros and optional ``;``, ``&amp;`` repeated for re-escaping; a space also as a
  non-breaking one), or a backslash escape (``\\uHHHH``, surrogate pairs for characters beyond
  the BMP, ``\\xHH``, JSON's short ones, with any number of backslashes). Any mixture of these
  matches, so partial encoders (``quote`` keeps ``/``, browsers keep ``*``) need no list of
  their own;
* or its UTF-8 bytes in base64, standard or URL-safe, with or without ``=`` padding (matched
  case-sensitively: base64's case is meaning), and, when at least ``MIN_BASE64_CORE``
  characters long, the part of its base64 that is the same wherever it sits in a longer encoded
  message (``user:password``) at each of the three byte alignments.

A value longer than ``PER_CHARACTER_MAX`` (a key, a certificate) is matched in each whole encoding
(``literal_forms``) instead of character by character, which keeps its program small.

Each secret is one RE2 program (linear time in the text, whatever the secrets hold); the
matches of all of them are replaced in one pass, leftmost and longest first, so a placeholder is
never scrubbed again. The bound is the spec's ``MIN_SECRET`` (4 characters, a
shorter value would be ordinary text): being case-insensitive, a short secret that is also a
common word is scrubbed from text in any case (documented in docs/security.md).
"""

from __future__ import annotations

import base64
import html.entities
import json
import re
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import quote, quote_plus

import re2

MIN_BASE64_CORE = 8  # characters of an unaligned base64 core matched; shorter ones are too common in blobs
PER_CHARACTER_MAX = 256  # characters of a value matched in any mixture of encodings; a longer one (a key, a
# certificate) is matched in each encoding as a whole, which keeps a value of 4096 characters within RE2's budget
MAX_PROGRAM_MEMORY = 8 << 20  # RE2's budget per secret (program and DFA cache): a value of 4096 characters fits

_SURROGATE = re.compile("[\ud800-\udfff]")  # not UTF-8, so not text RE2 reads
_SHORT_ESCAPES = {'"': '"', "\\": "\\", "/": "/", "\b": "b", "\f": "f", "\n": "n", "\r": "r", "\t": "t"}


def _entity_names() -> dict[str, list[str]]:
    """Each character's HTML named references (``amp;`` and the legacy ``amp``), from the HTML5 table."""
    names: dict[str, list[str]] = {}
    for name, value in html.entities.html5.items():
        if len(value) == 1:
            names.setdefault(value, []).append(name)
    return names


_NAMES = _entity_names()


def placeholder(name: str) -> str:
    return f"<secret>{name}</secret>"


def _percent(char: str) -> str:
    return "".join(f"%(?:25)*{byte:02x}" for byte in char.encode("utf-8"))


def _backslash(char: str) -> list[str]:
    code = ord(char)
    units = [code] if code < 0x10000 else [0xD800 + ((code - 0x10000) >> 10), 0xDC00 + ((code - 0x10000) & 0x3FF)]
    forms = ["".join(rf"\\+u{unit:04x}" for unit in units)]
    if code < 0x100:
        forms.append(rf"\\+x{code:02x}")
    if char in _SHORT_ESCAPES:
        forms.append(r"\\+" + re2.escape(_SHORT_ESCAPES[char]))
    return forms


def _reference(char: str) -> list[str]:
    code = ord(char)
    refs = [f"#0*{code};?", f"#x0*{code:x};?", *(re2.escape(n) for n in _NAMES.get(char, []))]
    return [f"&(?:amp;)*{ref}" for ref in refs]


def _char(char: str) -> str:
    """Every way ``char`` is written by the encoders above (case folded by the pattern's flag); the
    escapes first, so that at the end of a value ``\\\\`` is taken whole rather than its first ``\\``."""
    forms = [*_backslash(char), *_reference(char), _percent(char), re2.escape(char)]
    if char == " ":
        forms += [r"\+", "\u00a0", *_reference("\u00a0")]
    return "(?:" + "|".join(forms) + ")"


def _base64_char(char: str) -> str:
    """One base64 character: a letter or digit as it is (its case matters), the rest in any encoding
    (``+``, ``/`` and ``=`` are percent-encoded in a URL, ``/`` backslashed in JSON)."""
    return f"(?-i:{char})" if char.isalnum() else _char(char)


def base64_forms(value: str) -> list[str]:
    """The base64 texts that reveal ``value``: its encodings, then its cores at each alignment."""
    data = value.encode("utf-8")
    forms: list[str] = []
    for encode in (base64.b64encode, base64.urlsafe_b64encode):
        whole = encode(data).decode()
        forms += [whole, whole.rstrip("=")]
        for shift in range(3):
            shifted = encode(b"\0" * shift + data).decode()
            core = shifted[-(-8 * shift // 6):(8 * (shift + len(data))) // 6]
            if len(core) >= MIN_BASE64_CORE:
                forms.append(core)
    return list(dict.fromkeys(forms))


def literal_forms(value: str) -> list[str]:
    """A long value's whole encodings, each as one encoder writes it (escaped, encoded, entity-escaped)."""
    forms = [value, json.dumps(value)[1:-1], json.dumps(value, ensure_ascii=False)[1:-1], quote(value, safe=""),
             quote(value), quote_plus(value), quote_plus(value, safe="/"), html.escape(value), html.escape(value, False)]
    return list(dict.fromkeys(forms))


def _pattern(value: str) -> str:
    if len(value) <= PER_CHARACTER_MAX:
        echoed = "".join(_char(c) for c in value)
    else:
        echoed = "|".join(re2.escape(form) for form in literal_forms(value))
    encoded = ["".join(_base64_char(c) for c in form) for form in base64_forms(value)]
    return "|".join([echoed, *encoded])


class Scrubber:
    """One job's secrets, compiled once; ``scrub`` replaces every echo with its placeholder.

    One RE2 program per secret rather than one for all: a program's DFA states are sets of its
    positions, and twenty long secrets with their encodings together made states too large for
    the DFA's memory (RE2 then falls back to its far slower NFA: 12 s for 5 MB with 20 random
    secrets of 256 characters, against 0.4 s as 20 passes)."""

    def __init__(self, values: Mapping[str, str], more: Mapping[str, Sequence[str]] | None = None) -> None:
        """``values`` by name; ``more``: further values under a name of their own or one already
        there (the one-time codes typed of a second factor, scrubbed to the factor's placeholder)."""
        pairs = [*values.items(), *((name, value) for name, found in (more or {}).items() for value in found)]
        ordered = sorted(((name, value) for name, value in pairs if value), key=lambda kv: -len(kv[1]))
        options = re2.Options()
        options.max_mem = MAX_PROGRAM_MEMORY
        options.log_errors = False
        # not re2.compile: it keeps the last 128 patterns compiled, so the values of finished jobs
        # (and their programs) would stay in the worker after their jobs
        self._programs = [(name, re2._Regexp(f"(?i:{_pattern(value)})", options)) for name, value in ordered]

    def __bool__(self) -> bool:
        return bool(self._programs)

    def scrub(self, text: str) -> str:
        """``text`` with every echo of every secret replaced by its placeholder."""
        if not self._programs or not text:
            return text
        try:
            return self._replaced(text)
        except UnicodeEncodeError:  # a lone surrogate (a page's JavaScript string): kept as U+FFFD
            return self._replaced(_SURROGATE.sub("\ufffd", text))

    def _replaced(self, text: str) -> str:
        """Each match replaced, the leftmost and then the longest first; a match overlapping one
        replaced already adds its own placeholder for what it covers beyond it (so nothing of
        either value is left), and a placeholder is never scrubbed again."""
        found = sorted((match.start(), -match.end(), rank) for rank, (_, program) in enumerate(self._programs)
                       for match in program.finditer(text))
        if not found:
            return text
        out, done = [], 0
        for start, end, rank in found:
            if -end <= done:
                continue  # within what is replaced already
            out += [text[done:max(start, done)], placeholder(self._programs[rank][0])]
            done = -end
        out.append(text[done:])
        return "".join(out)

    def scrub_value(self, value: Any) -> Any:
        """A JSON-like value (dicts, lists, strings; keys too) with every string scrubbed: a record
        stays a valid record whatever a secret's characters are."""
        if isinstance(value, str):
            return self.scrub(value)
        if isinstance(value, dict):
            return {self.scrub(k) if isinstance(k, str) else k: self.scrub_value(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [self.scrub_value(v) for v in value]
        return value
