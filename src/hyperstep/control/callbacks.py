"""Keras callbacks (PLACEHOLDER: being written; see issues 3, 5, 6)."""
