"""An endpoint's console page in a real browser against the live stack: its invocation charts
draw a silent minute as a gap (never a line across it) and counts as bars from zero; after an
update to a broken config is rolled back, the page shows the red failure reason and no longer
the green "Deploying … (blue/green)" note of that update, and its live refresh keeps it so.
Pages are reached by clicking from the endpoints list, as a user does; they fit a phone."""

import re
import time
from urllib.parse import urlparse

import pytest
from playwright.sync_api import Page, expect

from tests.e2e import past_invocations
from tests.e2e.console_sign_in import sign_in
from tests.e2e.hosting import wait_for_endpoint
from tests.e2e.test_console_forms import assert_fits_a_phone

pytest_plugins = ["tests.e2e.browser", "tests.e2e.hosting_fixtures"]  # probe_image, hosting
MINUTE_MS = 60_000
# Minutes (from ten minutes ago) with invocations, and their model latencies in seconds; minute 2
# had none. Each minute's count differs, so that the bars' heights can be checked against them.
SEEDED = {0: [0.010, 0.012], 1: [0.020, 0.022, 0.024], 3: [0.015] * 4, 4: [0.030] * 5}
ROLLBACK_MS = 180_000  # the broken fleet fails its startup health checks, then is removed


@pytest.fixture
def page(stack, browser_context) -> Page:
    page = browser_context.new_page()
    sign_in(page, stack.endpoint_url, stack.access_key_id, stack.secret_access_key)
    return page


def open_endpoint(page: Page, name: str) -> None:
    """From the endpoints list, by the endpoint's name: whatever the page's address is made of."""
    page.get_by_role("link", name="Endpoints", exact=True).click()
    page.get_by_role("link", name=name, exact=True).click()
    expect(page.get_by_role("heading", name=name, exact=True)).to_be_visible()


def test_a_silent_minute_is_a_gap_in_the_lines_and_counts_are_bars_from_zero(
    stack, sagemaker, hosting, probe_image, page, screenshot_dir
):
    name = hosting.probe_endpoint(probe_image)
    start = (int(time.time() * 1000) // MINUTE_MS - 10) * MINUTE_MS
    minutes = {start + index * MINUTE_MS: latencies for index, latencies in SEEDED.items()}
    past_invocations.write(stack.account_id, stack.region, name, "AllTraffic", minutes)

    open_endpoint(page, name)

    latency = page.locator('[data-chart="ModelLatency (ms)"]')
    for line in ("p50", "p99"):
        path = latency.locator(f'path[data-line="{line}"]')
        expect(path).to_have_attribute("data-points", str(len(SEEDED)))
        segments = _segments(path.get_attribute("d"))
        # Two pieces, minutes 0-1 and 3-4: the line is lifted over minute 2, not drawn across it.
        assert [len(points) for points in segments] == [2, 2], segments
        assert segments[0][-1][0] < segments[1][0][0]
    assert latency.locator("circle.point").count() == 2 * len(SEEDED)
    expect(page.locator("[data-no-metrics]")).to_be_hidden()

    invocations = page.locator('[data-chart="Invocations"]')
    expect(invocations.locator("rect.bar")).to_have_count(len(SEEDED))
    chart = invocations.locator("svg").evaluate(
        """svg => ({
            bars: [...svg.querySelectorAll("rect.bar")].map((bar) => ({
                x: +bar.getAttribute("x"), top: +bar.getAttribute("y"),
                height: +bar.getAttribute("height")})),
            grid: [...svg.querySelectorAll("line.grid")].map((line) => +line.getAttribute("y1")),
            labels: [...svg.querySelectorAll("text.axis")].map((text) => text.textContent),
        })"""
    )
    bottom = max(chart["grid"])
    assert chart["labels"][0] == "0" and chart["grid"][0] == bottom  # the chart's floor is 0
    for bar in chart["bars"]:
        assert bar["top"] + bar["height"] == pytest.approx(bottom)  # every bar stands on 0
    counts = [len(latencies) for latencies in SEEDED.values()]
    heights = [bar["height"] for bar in chart["bars"]]
    assert [height / heights[-1] for height in heights] == pytest.approx([c / counts[-1] for c in counts])
    xs = [bar["x"] for bar in chart["bars"]]
    period = xs[1] - xs[0]
    steps = [after - before for before, after in zip(xs, xs[1:], strict=False)]
    assert steps == pytest.approx([period, 2 * period, period])  # no bar in minute 2
    expect(invocations.locator(".chart-final")).to_contain_text("last 5 ")
    page.screenshot(path=screenshot_dir / "endpoint-charts-gap.png", full_page=True)
    assert_fits_a_phone(page)


def _segments(d: str) -> list[list[tuple[float, float]]]:
    """An SVG path's subpaths (each `M` starts one) as their points."""
    pieces = [piece for piece in re.split(r"(?=M)", d.strip()) if piece]
    return [
        [(float(x), float(y)) for x, y in re.findall(r"[ML]\s*(-?[\d.]+),(-?[\d.]+)", piece)]
        for piece in pieces
    ]


def test_a_rolled_back_update_shows_its_reason_and_no_stale_deploying_note(
    stack, sagemaker, hosting, probe_image, page, screenshot_dir
):
    name = hosting.probe_endpoint(probe_image, tag="blue")
    blue = sagemaker.describe_endpoint(EndpointName=name)["EndpointConfigName"]
    broken_model = hosting.model(probe_image, {"PROBE_TAG": "broken", "PROBE_PING": "fail"})
    broken = hosting.config(("AllTraffic", broken_model, 1, 1.0))
    open_endpoint(page, name)

    page.get_by_label("Endpoint config").select_option(broken)
    page.get_by_role("button", name="Update endpoint").click()

    expect(page.get_by_role("status")).to_have_text(f"Deploying {broken} (blue/green).")
    failure = page.get_by_test_id("failure-reason")
    expect(failure).to_contain_text(  # live, no reload
        f"The update to endpoint configuration {broken} was rolled back:", timeout=ROLLBACK_MS
    )
    expect(failure).to_contain_text("did not pass the ping health check")
    expect(page.get_by_test_id("status").first).to_have_text("InService")

    _wait_for_a_whole_refresh(page)

    expect(failure).to_be_visible()
    expect(page.get_by_text("(blue/green).")).to_have_count(0)  # the update's green note is gone
    expect(page.locator(".messages .message")).to_have_count(0)
    expect(page.get_by_text(f"Deploying {broken}")).to_have_count(0)  # nor is it shown as pending
    expect(page.get_by_role("button", name="Update endpoint")).to_be_visible()  # InService's forms
    described = wait_for_endpoint(sagemaker, name)
    assert described["EndpointConfigName"] == blue
    page.screenshot(path=screenshot_dir / "endpoint-rolled-back.png", full_page=True)
    assert_fits_a_phone(page)
    expect(failure).to_be_visible()


def _wait_for_a_whole_refresh(page: Page) -> None:
    """Until the page has fetched its live fragment and applied it: the pass that fetches `/live`
    puts its fragments in the page before it fetches the charts' metrics, so a metrics answer
    after a live one closes a pass begun from now on."""
    heading = page.locator("[data-live]")
    live, metrics = heading.get_attribute("data-live"), heading.get_attribute("data-metrics")
    seen_live = []

    def after_a_live_pass(response) -> bool:
        path = urlparse(response.url).path
        if path == live:
            seen_live.append(response)
        return bool(seen_live) and path == metrics

    with page.expect_response(after_a_live_pass, timeout=30_000):
        pass
