"""Signing a browser in to the console with an access key, as a user does."""

import re

from playwright.sync_api import Page, expect


def sign_in(page: Page, base_url: str, key_id: str, secret: str) -> None:
    page.goto(f"{base_url}/")  # the root sends a browser to the console, which asks for a sign-in
    expect(page).to_have_url(re.compile(r"/console/login"))
    expect(page.get_by_role("heading", name="Sign in to Sageport")).to_be_visible()
    page.get_by_label("Access key ID").fill(key_id)
    page.get_by_label("Secret access key").fill(secret)
    page.get_by_role("button", name="Sign in", exact=True).click()
    expect(page.get_by_role("heading", name="Training jobs")).to_be_visible()
