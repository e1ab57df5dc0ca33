"""The console's footer rebuilds once per batch of binding changes and shows the last."""

from __future__ import annotations

from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.widgets import Static

from goalsui.tui.widgets.footer import Footer


class Keys(App[None]):
    ENABLE_COMMAND_PALETTE = False
    BINDINGS = [Binding("a", "alpha", "Alpha"), Binding("b", "beta", "Beta")]

    def __init__(self) -> None:
        super().__init__()
        self.offer_beta = False
        self.builds = 0

    def compose(self) -> ComposeResult:
        yield Static("body")
        yield Footer()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        return self.offer_beta if action == "beta" else True

    def action_alpha(self) -> None: ...

    def action_beta(self) -> None: ...


def shown(app: Keys) -> set[str]:
    return {key.description for key in app.query("FooterKey")}  # type: ignore[attr-defined]  # FooterKey is private to Textual


async def test_several_binding_changes_in_one_refresh_rebuild_the_footer_once() -> None:
    app = Keys()
    async with app.run_test(size=(80, 10)) as pilot:
        await pilot.pause()
        assert shown(app) == {"Alpha"}
        rebuilt = 0
        original = Footer.compose

        def counting(self: Footer) -> ComposeResult:
            nonlocal rebuilt
            rebuilt += 1
            return original(self)

        Footer.compose = counting  # type: ignore[method-assign]  # counts the footer's rebuilds
        try:
            for _ in range(4):
                app.refresh_bindings()
            app.offer_beta = True
            app.refresh_bindings()  # the last change in the batch is the one shown
            await pilot.pause()
            await pilot.pause()
        finally:
            Footer.compose = original  # type: ignore[method-assign]  # put back
        assert shown(app) == {"Alpha", "Beta"}
        assert rebuilt == 1

        app.offer_beta = False  # a later change still rebuilds it
        app.refresh_bindings()
        await pilot.pause()
        await pilot.pause()
        assert shown(app) == {"Alpha"}
