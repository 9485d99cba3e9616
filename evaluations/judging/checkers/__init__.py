"""P(yes) backends the reference-free judges ask: the embedded llama.cpp scorer (``yesno``) and a served model (``served_checker``).

Nothing is imported or loaded here."""
