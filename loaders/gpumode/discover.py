"""Discover what to import: the dataset's configs (GET /splits) and its boards (every page of
config `leaderboards`), then the --leaderboard selection.

Failing to list the configs is fatal (`FetchError` / `ParseError` propagate). A bad board row
or page is a problem (the source could not be read as it should); a board the `leaderboards`
config does not list, or a `--leaderboard` name it does not list, is a notice: its rows are still
imported (the config is stale for some boards), under the name their rows give.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from loaders.common.http import Response
from loaders.gpumode.fetch import Source, fetch_pages, fetch_splits
from loaders.gpumode.normalize import Board
from loaders.gpumode.parse import ParseError, parse_leaderboard, parse_splits

BOARDS_CONFIG = "leaderboards"
# Configs not read, and why: their rows are in another config too.
SKIPPED_CONFIGS = {
    "amd_submissions": "every AMD submission, passing or not; the passing ones are amd_successful_submissions",
}


@dataclass
class Discovery:
    responses: list[Response] = field(default_factory=list)
    configs: list[str] = field(default_factory=list)  # submission configs to read, in order
    configs_listed: int = 0
    boards: dict[int, Board] = field(default_factory=dict)  # listed boards by id
    by_name: dict[str, Board] = field(default_factory=dict)
    selected: set[str] | None = None  # board names given with --leaderboard
    problems: list[tuple[str, str]] = field(default_factory=list)  # (subject, reason): unreadable
    notices: list[tuple[str, str]] = field(default_factory=list)  # (subject, what): nothing lost

    def board_by_id(self, board_id: int, name: str | None = None) -> Board:
        board = self.boards.get(board_id)
        if board is None:
            board = self.boards[board_id] = Board(board_id, name or f"leaderboard-{board_id}", listed=False)
            self.by_name.setdefault(board.name, board)
        return board

    def board_by_name(self, name: str) -> Board:
        board = self.by_name.get(name)
        if board is None:
            board = self.by_name[name] = Board(None, name, listed=False)
        return board

    def wanted(self, board: Board) -> bool:
        return self.selected is None or board.name in self.selected


async def discover(source: Source, *, leaderboards: list[str] | None = None) -> Discovery:
    found = Discovery()
    response = await fetch_splits(source)
    found.responses.append(response)
    configs = parse_splits(response.body)
    found.configs_listed = len(configs)
    if BOARDS_CONFIG in configs:
        async for fetched in fetch_pages(source, BOARDS_CONFIG):
            if fetched.response is not None:
                found.responses.append(fetched.response)
            if fetched.error is not None:
                found.problems.append((f"{BOARDS_CONFIG} offset {fetched.offset}", fetched.error))
                continue
            for row in fetched.page.rows:
                try:
                    parsed = parse_leaderboard(row)
                except ParseError as error:
                    found.problems.append((f"{BOARDS_CONFIG} row {row.index}", str(error)))
                    continue
                board = Board(parsed.id, parsed.name, parsed.deadline, parsed.description, tuple(parsed.gpu_types))
                found.boards[board.id] = board
                found.by_name[board.name] = board
    else:
        found.notices.append((BOARDS_CONFIG, "the dataset lists no leaderboards config: boards are named from their rows"))
    found.configs = [c for c in configs if c != BOARDS_CONFIG and c not in SKIPPED_CONFIGS]
    if leaderboards:
        found.selected = set(leaderboards)
        for name in dict.fromkeys(leaderboards):
            if name not in found.by_name:
                found.notices.append((f"leaderboard {name}", "not listed in the leaderboards config; rows naming it are still imported"))
    return found
