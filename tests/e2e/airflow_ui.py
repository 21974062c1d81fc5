"""Driving the Airflow 3 UI with Playwright and Debian's Chromium (no browser download)."""

from __future__ import annotations

import datetime as dt

CHROMIUM = "/usr/bin/chromium"
# As root in a sandbox, without the network: no sandbox, no background connections.
CHROMIUM_ARGS = [
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def login(page, url: str, user: str, password: str) -> None:
    page.goto(url)
    page.get_by_label("Username").fill(user)
    page.get_by_label("Password").fill(password)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url(lambda address: "/auth/" not in address)
    page.wait_for_load_state("networkidle")


def dag_ids_listed(page, url: str) -> list[str]:
    page.goto(f"{url}/dags")
    page.get_by_role("link", name="rebuild_derived").first.wait_for()
    return [link.inner_text().strip() for link in page.locator("a[href^='/dags/']").all()]


def hover_description(page, dag_id: str, expected: str) -> None:
    """Airflow 3's DAG list shows a DAG's description as the tooltip of its name."""
    page.get_by_test_id("dag-id").filter(has_text=dag_id).first.hover()
    page.get_by_text(expected, exact=False).first.wait_for(timeout=15_000)


def _pick(dialog, index: int, when: dt.datetime) -> None:
    """Type a date and time into the index-th datetime field of the backfill form."""
    dialog.get_by_test_id("datetime-input").nth(index).click()
    popover = dialog.page.locator("[data-scope=popover][data-part=content][data-state=open]").last
    popover.get_by_placeholder("YYYY/MM/DD").fill(when.strftime("%Y/%m/%d"))
    popover.get_by_placeholder("HH:mm").fill(when.strftime("%H:%M"))
    popover.press("Escape")
    popover.wait_for(state="hidden")  # its role is dialog too: gone before the form is looked up again


def _trigger_dialog(page, url: str, dag_id: str):
    page.goto(f"{url}/dags/{dag_id}")
    page.get_by_role("button", name="Trigger").first.click()
    # The date pickers' popovers also have the role dialog: the form is the dialog that is not one.
    dialog = page.locator("[role=dialog]:not([data-scope=popover])")
    dialog.wait_for()
    return dialog


def trigger_with_params(
    page,
    url: str,
    dag_id: str,
    params: dict[str, str],
    logical_date: dt.datetime | None = None,
    refused: str | None = None,
) -> None:
    """A single run from the Trigger form, typing each param into its field (and the logical
    date, the form's first date field, when given; else the form's own, now). With `refused`,
    the form must stay open showing that text (the API refused the run)."""
    dialog = _trigger_dialog(page, url, dag_id)
    if logical_date is not None:
        _pick(dialog, 0, logical_date)
    for name, value in params.items():
        dialog.locator(f"[name=element_{name}]").fill(value)
    dialog.get_by_role("button", name="Trigger").click()
    if refused is not None:
        dialog.get_by_text(refused, exact=False).first.wait_for(timeout=30_000)
        return
    dialog.wait_for(state="hidden")


def trigger_backfill(
    page, url: str, dag_id: str, start: dt.datetime, end: dt.datetime, reprocess: str = "Missing Runs"
) -> None:
    """From the Trigger dialog's Backfill tab; `reprocess` is the label of the behaviour to pick."""
    dialog = _trigger_dialog(page, url, dag_id)
    dialog.get_by_text("Backfill", exact=True).click()
    _pick(dialog, 0, start)
    _pick(dialog, 1, end)
    dialog.get_by_text(reprocess, exact=True).click()
    dialog.get_by_role("button", name="Run Backfill").click()
    dialog.wait_for(state="hidden")


def run_ids_listed(page, url: str, dag_id: str, prefixes: list[str]) -> None:
    """The DAG's runs list (Runs tab) shows a run whose id starts with each prefix (ids may be cut
    with an ellipsis after them)."""
    import re

    page.goto(f"{url}/dags/{dag_id}/runs")
    for prefix in prefixes:
        page.get_by_text(re.compile("^" + re.escape(prefix))).first.wait_for(timeout=30_000)
