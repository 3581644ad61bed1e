"""What a job is, in pure pydantic shared by the API, the store, the workers and the client: its
words (``status``), its spec (``spec``) with its browser settings (``browsing``), its action
schemas (``actions``) and element locators (``locators``), what it produces (``result``), and its
record and events as users see them (``record``)."""
