"""What counts as interactive, decided on the snapshot's columns without decoding every node.

Two strengths of evidence:
- strong: native controls, ARIA widget roles, contenteditable, tabindex >= 0. Always candidates.
- weak: Chrome's ``isClickable`` alone (a JavaScript click listener) or the start of a
  ``cursor: pointer`` region. Weak candidates are dropped when a strong one above or below them
  already covers the click: a listener on a container that holds real controls is event
  delegation (React's root, a card around a link), not a control of its own.
"""

from __future__ import annotations

from itertools import compress

from dom.tree import CURSOR, ELEMENT, DocTree, positions

NATIVE_TAGS = ("A", "BUTTON", "INPUT", "SELECT", "TEXTAREA", "SUMMARY", "OPTION", "LABEL")
FORM_CONTROLS = {"button", "input", "select", "textarea", "option", "optgroup", "fieldset"}
NEVER = ("HTML", "BODY", "#document", "HEAD", "SCRIPT", "STYLE", "IFRAME", "FRAME")

WIDGET_ROLES = frozenset({
    "button", "link", "checkbox", "radio", "switch", "tab", "menuitem", "menuitemcheckbox",
    "menuitemradio", "option", "combobox", "textbox", "searchbox", "slider", "spinbutton", "listbox",
    "treeitem", "gridcell", "scrollbar", "columnheader", "rowheader",
})

IMPLICIT_ROLES = {
    "a": "link", "button": "button", "select": "combobox", "textarea": "textbox", "summary": "button",
    "option": "option",
}
INPUT_ROLES = {
    "checkbox": "checkbox", "radio": "radio", "range": "slider", "number": "spinbutton", "search": "searchbox",
    "button": "button", "submit": "button", "reset": "button", "image": "button", "file": "button",
}


def implicit_role(tag: str, input_type: str = "", *, editable: bool = False) -> str | None:
    """The ARIA role an element has without a ``role`` attribute (for the controls we offer)."""
    if tag == "input":
        return INPUT_ROLES.get(input_type or "text", "textbox")
    return IMPLICIT_ROLES.get(tag) or ("textbox" if editable else None)


class Candidates:
    """Node indexes of one document that may be offered, split by strength of evidence."""

    def __init__(self, doc: DocTree) -> None:
        s = doc.s
        self.doc = doc
        name, lay = doc.name, doc.lay
        native = s.ids(*NATIVE_TAGS)
        never = s.ids(*NEVER)
        a_tag, label_tag, option_tag = s.id("A"), s.id("LABEL"), s.id("OPTION")
        href = s.id("href")
        strong: set[int] = set()
        # one pass over the names in C (eight list scans, one a tag, cost twice as much on a large page)
        for i in compress(range(doc.n), map(native.__contains__, name)):
            if lay[i] < 0:
                continue
            if name[i] == a_tag and doc.attr(i, href) is None and i not in doc.clickable:
                continue  # an anchor without href is plain text unless a script listens on it
            strong.add(i)
        self._add_attribute_signals(strong)
        self.labels = {i for i in strong if name[i] == label_tag}
        self.options = {i for i in strong if name[i] == option_tag}
        weak = {i for i in doc.clickable if lay[i] >= 0 and name[i] not in never} - strong
        weak |= self._pointer_starts(never) - strong
        self.strong, self.weak = strong, weak
        self.all = strong | weak

    def _add_attribute_signals(self, strong: set[int]) -> None:
        doc, s = self.doc, self.doc.s
        role, tabindex, editable = s.id("role"), s.id("tabindex"), s.id("contenteditable")
        lay = doc.lay
        for i in doc.marked():
            if lay[i] < 0 or doc.node_type[i] != ELEMENT:
                continue
            r = doc.attr(i, role)
            if r and r.split()[0].lower() in WIDGET_ROLES:
                strong.add(i)
                continue
            t = doc.attr(i, tabindex)
            if t is not None and t.strip().lstrip("-").isdigit() and int(t) >= 0:
                strong.add(i)
                continue
            e = doc.attr(i, editable)
            if e is not None and e.lower() in ("", "true", "plaintext-only"):
                if not self._inside_editable(i, editable):
                    strong.add(i)

    def _inside_editable(self, i: int, editable: int) -> bool:
        p = self.doc.parent[i]
        while p > 0:
            if self.doc.attr(p, editable) not in (None, "false"):
                return True
            p = self.doc.parent[p]
        return False

    def _pointer_starts(self, never: set[int]) -> set[int]:
        """Elements with ``cursor: pointer`` whose parent does not have it (cursor is inherited)."""
        doc = self.doc
        pointer = doc.s.id("pointer")
        if pointer < 0:
            return set()
        cursor, lay_nodes, lay, parent = doc.column(CURSOR), doc.lay_nodes, doc.lay, doc.parent
        found = set()
        for k in positions(cursor, pointer):
            i = lay_nodes[k]
            if doc.node_type[i] != ELEMENT or doc.name[i] in never:
                continue
            p = parent[i]
            while p >= 0 and lay[p] < 0:  # display: contents and shadow hosts' slots have no box
                p = parent[p]
            if p < 0 or cursor[lay[p]] != pointer:
                found.add(i)
        return found
