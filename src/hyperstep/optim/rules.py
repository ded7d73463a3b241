"""Update rules (PLACEHOLDER: being written; see issue 4)."""
