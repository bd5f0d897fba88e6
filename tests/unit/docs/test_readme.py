"""The README is a first screen (issue 29): at most 250 lines, the two set-up commands, and links
into docs/ that all lead to a page."""
import re

from devstack.stack import PROJECT_DIR

README = PROJECT_DIR / "README.md"
_LINK = re.compile(r"\]\(([^)#]+)(?:#[^)]*)?\)")


def test_the_readme_is_at_most_250_lines():
    assert len(README.read_text().splitlines()) <= 250


def test_the_readme_shows_the_two_commands():
    text = README.read_text()
    block = text.split("## The two commands", 1)[1].split("```sh\n", 1)[1].split("```", 1)[0]

    assert [line.split()[:2] for line in block.splitlines()] == [["make", "run"], ["make", "test"]]


def test_every_relative_link_of_the_readme_leads_to_a_file():
    targets = [target for target in _LINK.findall(README.read_text()) if "://" not in target]

    assert targets  # the README points into docs/
    assert [target for target in targets if not (PROJECT_DIR / target).exists()] == []
