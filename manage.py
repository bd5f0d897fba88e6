#!/usr/bin/env python3
"""Django's command-line entry point for Sageport."""
import os
import sys

if __name__ == "__main__":
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "controlplane.settings")
    from django.core.management import execute_from_command_line

    from controlplane.startup import exit_on_settings_error

    with exit_on_settings_error():
        execute_from_command_line(sys.argv)
