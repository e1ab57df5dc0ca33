"""The console's ``App`` base: stylesheet, app-wide keys, commands, themes, keymap, help."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from textual import work
from textual.app import App
from textual.binding import BindingType
from textual.command import Provider
from textual.message import Message

from goalsui.tui import keys
from goalsui.tui.fmt import Palette
from goalsui.tui.messages import PaletteChanged
from goalsui.tui.notices import NoticeMixin, WorkerFailures
from goalsui.tui.themes import DEFAULT_THEME, FALLBACK, load_themes, user_theme_files

if TYPE_CHECKING:
    from goalsui.kb.confined import ConfinedTree
    from goalsui.service import Service

#: warnings about the theme files: (message, title)
Notes = list[tuple[str, str]]


def _goals_commands() -> type[Provider]:
    """The palette's commands, loaded when the palette first opens."""
    from goalsui.tui.commands import GoalsCommands

    return GoalsCommands


class ConsoleBase(NoticeMixin, WorkerFailures, App[int]):
    """Looks and keys: the theme files, the wanted theme, the KB's keymap, ``?``."""

    CSS_PATH = "styles/app.tcss"
    TITLE = "goalsui"
    BINDINGS: ClassVar[list[BindingType]] = [*keys.APP]
    COMMANDS = App.COMMANDS | {_goals_commands}

    #: What the feed, the runtime and the screens share; the subclass sets them.
    service: Service
    service_ready: bool
    kb_root: Path
    read_only: bool
    frozen: bool
    clock: Callable[[], datetime]

    def __init__(self, *, theme: str | None, ui_settings: dict[str, Any] | None) -> None:
        super().__init__()
        self.init_notices()
        self.want_theme = theme
        #: theme and keymap until the service is open (``opener`` mode)
        self._given_settings = ui_settings
        self.palette = Palette()
        #: the loaded themes' names (the palette offers them)
        self.theme_names: list[str] = []
        #: the theme files wait for the first frame (the default theme is built in)
        self.themes_deferred = False
        self._theme_notes: Notes = []

    async def ready_service(self) -> Service:
        """The service, opened first if the console has only been reading its records."""
        return self.service

    def kb_tree(self, goal_id: str) -> ConfinedTree:
        """A goal's tree of files (blocking: for a worker's thread). The files need no
        database, so a console still opening or only reading its records shows them too."""
        if self.service_ready:
            return self.service.files.tree(goal_id)
        from goalsui.service.quick import goal_files

        return goal_files(self.kb_root, goal_id)

    @property
    def alive(self) -> bool:
        """False once the app is closing (``is_running`` turns False before the screens
        are taken apart): late worker results and ticks are dropped."""
        return bool(self.screen_stack) and self.is_running and not self.ending

    @property
    def ending(self) -> bool:
        """``exit()`` was called: the app is on its way out."""
        return self._exit

    def broadcast(self, build: Callable[[], Message]) -> None:
        """Post a message (a new one from ``build()`` for each) to every screen in the stack."""
        for screen in list(self.screen_stack):
            screen.post_message(build())

    def in_background(
        self, work: Callable[[], Coroutine[Any, Any, Any]], group: str, **options: Any
    ) -> None:
        """Run ``work()`` in a worker; a failure is reported (``WorkerFailures``), the console
        goes on. A function, not a coroutine: an exclusive worker replaced before it starts
        then leaves no coroutine behind that was never awaited."""
        self.run_worker(work, group=group, exit_on_error=False, **options)

    # -- themes ------------------------------------------------------------------------------
    def choose_theme(self) -> None:
        """Register the themes and set the wanted one before the app runs, so the stylesheet
        is built once with its colours; toasts wait for the mount."""
        settings = self.ui_settings()
        wanted = self.want_theme or settings.get("theme") or DEFAULT_THEME
        if not self.service_ready and wanted == DEFAULT_THEME and not user_theme_files():
            # The default theme is built in: the files (and YAML) wait for the first frame.
            self.register_theme(FALLBACK)
            self.theme_names = [DEFAULT_THEME]
            self.themes_deferred = True
        else:
            self._theme_notes = self._register_themes(load_themes())
            if not isinstance(wanted, str) or wanted not in self.available_themes:
                self._theme_notes.append((f"No theme named {wanted!r}; using {DEFAULT_THEME}", ""))
                wanted = DEFAULT_THEME
        self._set_first_theme(wanted)
        self.stylesheet.set_variables(self.get_css_variables())

    def _set_first_theme(self, name: str) -> None:
        """Set the theme before the app runs without the theme's watcher, which would parse
        every stylesheet a second time once the app starts; what else it does is done here."""
        self.set_reactive(App.theme, name)
        dark = self.current_theme.dark
        self.set_class(True, f"-theme-{name}", update=False)
        self.set_class(dark, "-dark-mode", update=False)
        self.set_class(not dark, "-light-mode", update=False)
        self._refresh_truecolor_filter(self.ansi_theme)

    @work(name="Reading the theme files", group="startup", exit_on_error=False)
    async def load_theme_files(self) -> None:
        """The theme files, after the first frame (the default theme was built in)."""
        loaded = await asyncio.to_thread(load_themes)
        for message, title in self._register_themes(loaded):
            self.notify(message, title=title, severity="warning")

    def _register_themes(self, loaded: Any) -> Notes:
        """Register loaded theme files; the toast to show for the files skipped, if any."""
        for theme in loaded.themes:
            self.register_theme(theme)
        self.theme_names = loaded.names
        return [("\n".join(loaded.problems), "Theme files skipped")] if loaded.problems else []

    def setup_looks(self) -> None:
        """At mount: the theme toasts, the palette, the KB's keymap."""
        for message, title in self._theme_notes:
            self.notify(message, title=title, severity="warning")
        self.palette = Palette.from_theme(self.current_theme)
        self.theme_changed_signal.subscribe(self, self._theme_changed)
        self.setup_keymap()

    def ui_settings(self) -> dict[str, Any]:
        """The KB's ``goalsui.yaml`` console settings (theme, keymap); {} when unreadable."""
        if not self.service_ready:
            return dict(self._given_settings or {})
        from goalsui.kb.ui_settings import read_ui_settings

        try:
            return read_ui_settings(self.service.kb.root)
        except Exception:  # noqa: BLE001 - settings are optional
            return {}

    def _theme_changed(self, theme: Any) -> None:
        self.palette = Palette.from_theme(theme)
        if self.alive:
            self.broadcast(PaletteChanged)

    def action_next_theme(self) -> None:
        names = self.theme_names or [DEFAULT_THEME]
        index = names.index(self.theme) if self.theme in names else -1
        self.theme = names[(index + 1) % len(names)]
        self.notify(f"Theme: {self.theme}")

    # -- keys ----------------------------------------------------------------------------------
    def setup_keymap(self) -> None:
        """Apply ``keymap:`` of goalsui.yaml (again when the file changes)."""
        keymap, problems = keys.clean_keymap(self.ui_settings().get("keymap"))
        problems += keys.keymap_conflicts(keymap)
        if problems:
            self.notify("\n".join(problems), title="goalsui.yaml keymap", severity="warning")
        if keymap:
            self.set_keymap(keymap)

    def handle_bindings_clash(self, clashed_bindings: set[Any], node: Any) -> None:
        names = ", ".join(sorted(f"{b.id or b.action} ({b.key})" for b in clashed_bindings))
        self.notify(f"Keymap: these keys were taken over: {names}", severity="warning")

    def action_help(self) -> None:
        from goalsui.tui.screens.modals import HelpScreen, help_groups

        if isinstance(self.screen, HelpScreen):
            return
        every_pane = self.screen is self.screen_stack[0]  # the main screen: every pane's keys
        self.push_screen(HelpScreen("Keys", help_groups(self, every_pane=every_pane)))
