"""Auth profiles (a login's cookies and localStorage, kept for later jobs): the pure models
(``models``) and their sealed, versioned storage in Redis (``store``)."""
