"""Django management package (holds commands/)."""
