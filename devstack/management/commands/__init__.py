"""manage.py commands of this app."""
