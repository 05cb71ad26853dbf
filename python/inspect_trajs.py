"""Open trajectory files in mini-swe-agent's own inspector, headless.

Runs `mini-extra inspector`'s TrajectoryInspector (its loader, its step
grouping, its rendering of every message) under textual's test pilot, walks
every step of every file, and prints one JSON line per file:

    {"file": ..., "messages": N, "steps": N, "roles": [...], "errors": [...]}

`errors` holds the notifications the inspector raised (a file it could not
load says so there). Used by the tests to check that `turnlake show --format
traj.json` writes files the inspector reads.

    python python/inspect_trajs.py FILE...
"""

import asyncio
import json
import os
import sys
from pathlib import Path

os.environ.setdefault("MSWEA_SILENT_STARTUP", "1")

from minisweagent.run.utilities.inspector import TrajectoryInspector  # noqa: E402


async def inspect(path: Path) -> dict:
    app = TrajectoryInspector([path])
    errors = []
    notify = app.notify

    def record(message, *args, **kwargs):
        errors.append(str(message))
        return notify(message, *args, **kwargs)

    app.notify = record
    # The constructor loaded the file before `notify` was wrapped: load it again.
    app._load_current_trajectory()
    roles = []
    async with app.run_test() as pilot:
        for i in range(app.n_steps):
            app.i_step = i
            app.update_content()
            await pilot.pause()
            roles.append([m.get("role") or m.get("type") or "unknown" for m in app.steps[i]])
    return {
        "file": str(path),
        "messages": len(app.messages),
        "steps": app.n_steps,
        "roles": roles,
        "errors": errors,
    }


def main() -> None:
    for arg in sys.argv[1:]:
        print(json.dumps(asyncio.run(inspect(Path(arg)))), flush=True)


if __name__ == "__main__":
    main()
