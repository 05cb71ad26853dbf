"""Write mini-swe-agent trajectories the way a user's own runs are written.

Drives mini-swe-agent's real DefaultAgent and LocalEnvironment (real bash in
a scratch git repository) with its shipped config templates and its own
model classes. Only the network call is scripted: chat and text models get
litellm's own mock responses (`mock_response`, `mock_tool_calls`), the
Responses-API model gets OpenAI `Response` objects; everything after that
(parsing, format errors, cost, observations, serialization) is the agent's
code. Nothing leaves loopback.

    python python/mswea_runs.py OUT_DIR

writes OUT_DIR/<style>/<instance>/<instance>.traj.json and
OUT_DIR/<style>/preds.json (the layout of `mini-extra swebench`) for every
scenario below.
Runs are deterministic apart from timestamps.
"""

import os

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("MSWEA_COST_TRACKING", "ignore_errors")
os.environ.setdefault("MSWEA_SILENT_STARTUP", "1")
# A scripted reply that fails is a bug here: fail at once, not after retries.
os.environ.setdefault("MSWEA_MODEL_RETRY_STOP_AFTER_ATTEMPT", "1")

import json  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
from pathlib import Path  # noqa: E402

import litellm  # noqa: E402
import yaml  # noqa: E402
from openai.types.responses import Response  # noqa: E402

from minisweagent.agents.default import DefaultAgent  # noqa: E402
from minisweagent.config import get_config_path  # noqa: E402
from minisweagent.environments.local import LocalEnvironment  # noqa: E402
from minisweagent.models.litellm_model import LitellmModel  # noqa: E402
from minisweagent.models.litellm_response_model import LitellmResponseModel  # noqa: E402
from minisweagent.models.litellm_textbased_model import LitellmTextbasedModel  # noqa: E402
from minisweagent.models.utils.actions_toolcall import BASH_TOOL  # noqa: E402

SUBMIT = "echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && git diff"
LONG = "python3 -c \"print('\u00e9' * 12000)\""  # over the 10,000-character elision


class Script:
    """The responses a scripted model gives, in order."""

    def __init__(self, steps):
        self.steps = list(steps)
        self.n = 0

    def next(self):
        step = self.steps[self.n]
        self.n += 1
        return step


def call(i, command=None, name="bash", arguments=None):
    """A chat tool call; `arguments` overrides the JSON of `command`."""
    args = arguments if arguments is not None else json.dumps({"command": command})
    return {"id": f"call_{i}", "type": "function", "function": {"name": name, "arguments": args}}


class ScriptedToolcallModel(LitellmModel):
    """mini-swe-agent's chat tool-call model; litellm mocks the reply."""

    def __init__(self, script, **kwargs):
        super().__init__(**kwargs)
        self.script = script

    def _query(self, messages, **kwargs):
        text, calls = self.script.next()
        return litellm.completion(
            model=self.config.model_name,
            messages=messages,
            tools=[BASH_TOOL],
            mock_response=text,
            mock_tool_calls=calls,
        )


class ScriptedTextModel(LitellmTextbasedModel):
    """mini-swe-agent's text-action model; litellm mocks the reply."""

    def __init__(self, script, **kwargs):
        super().__init__(**kwargs)
        self.script = script

    def _query(self, messages, **kwargs):
        return litellm.completion(
            model=self.config.model_name, messages=messages, mock_response=self.script.next()
        )


class ScriptedResponseModel(LitellmResponseModel):
    """mini-swe-agent's Responses-API model, given OpenAI Response objects."""

    def __init__(self, script, **kwargs):
        super().__init__(**kwargs)
        self.script = script

    def _query(self, messages, **kwargs):
        text, calls, reasoning = self.script.next()
        n = self.script.n
        output = []
        if reasoning:
            output.append(
                {
                    "id": f"rs_{n}",
                    "type": "reasoning",
                    "summary": [{"type": "summary_text", "text": reasoning}],
                }
            )
        if text:
            output.append(
                {
                    "id": f"msg_{n}",
                    "type": "message",
                    "role": "assistant",
                    "status": "completed",
                    "content": [{"type": "output_text", "text": text, "annotations": []}],
                }
            )
        for i, (name, arguments) in enumerate(calls):
            output.append(
                {
                    "id": f"fc_{n}_{i}",
                    "type": "function_call",
                    "call_id": f"call_{n}_{i}",
                    "name": name,
                    "arguments": arguments,
                    "status": "completed",
                }
            )
        return Response.model_validate(
            {
                "id": f"resp_{n}",
                "object": "response",
                "created_at": 1700000000 + n,
                "model": self.config.model_name,
                "output": output,
                "parallel_tool_calls": True,
                "tool_choice": "auto",
                "tools": [],
                "status": "completed",
            }
        )


def register_costs(styles):
    """Price the mock models in litellm's registry, so cost and cost limits are real."""
    litellm.register_model(
        {
            f"openai/mock-{style}-model": {
                "input_cost_per_token": 1e-6,
                "output_cost_per_token": 2e-6,
                "litellm_provider": "openai",
                "mode": "responses" if style == "response" else "chat",
            }
            for style in styles
        }
    )


def config(name):
    return yaml.safe_load(get_config_path(name).read_text())


def scratch_repo(root):
    repo = Path(root)
    repo.mkdir(parents=True, exist_ok=True)
    (repo / "calc.py").write_text("def add(a, b):\n    return a - b  # \u00fcberpr\u00fcfen\n")
    (repo / "README.md").write_text("Caf\u00e9 calculator \u2615\n")
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "init.defaultBranch=main"]
    subprocess.run([*git, "init", "-q"], cwd=repo, check=True)
    subprocess.run([*git, "add", "."], cwd=repo, check=True)
    subprocess.run([*git, "commit", "-q", "-m", "start"], cwd=repo, check=True)
    return repo


def run(out, style, instance, model_class, config_name, steps, task, **limits):
    cfg = config(config_name)
    with tempfile.TemporaryDirectory() as tmp:
        repo = scratch_repo(Path(tmp) / "repo")
        env_cfg = {k: v for k, v in cfg.get("environment", {}).items() if k in ("env", "timeout")}
        env = LocalEnvironment(cwd=str(repo), **env_cfg)
        model_cfg = {k: v for k, v in cfg["model"].items() if k not in ("model_name", "model_class")}
        model_cfg["model_kwargs"] = {}
        model = model_class(Script(steps), model_name=f"openai/mock-{style}-model", **model_cfg)
        instance = f"calc__{style}_{instance}"
        path = out / style / instance / f"{instance}.traj.json"
        agent_cfg = {k: v for k, v in cfg["agent"].items() if k != "mode"}
        agent_cfg.update(limits)
        agent = DefaultAgent(model, env, output_path=path, **agent_cfg)
        result = agent.run(task)
    return path, result


def main(out):
    out = Path(out)
    register_costs(["toolcall", "textbased", "response"])
    task = "Fix add() in calc.py so that add(2, 3) == 5."
    fix = "sed -i 's/a - b/a + b/' calc.py"
    results = []
    tc = ScriptedToolcallModel
    results.append(run(out, "toolcall", "submit", tc, "mini", [
        ("Let me look around.", [call(1, "ls && cat calc.py")]),
        ("Check both files at once.", [call(2, "cat README.md"), call(3, "grep -n add calc.py")]),
        ("A test that does not exist yet.", [call(4, "cat test_calc.py")]),
        ("Forgot the command.", [call(5, name="bash", arguments='{"cmd": "ls"}')]),
        ("Fix it.", [call(6, fix)]),
        ("Fix it again (repeat).", [call(7, fix)]),
        ("Long output.", [call(8, LONG)]),
        ("Verify. \u2713", [call(9, "python3 -c 'import calc; print(calc.add(2, 3))'")]),
        ("Done.", [call(10, SUBMIT)]),
    ], task))
    results.append(run(out, "toolcall", "steplimit", tc, "mini", [
        ("Look.", [call(1, "ls")]),
        ("Look again.", [call(2, "ls")]),
        ("And again.", [call(3, "cat calc.py")]),
    ], task, step_limit=2))
    results.append(run(out, "toolcall", "formaterrors", tc, "mini", [
        ("No tool call at all.", None),
        ("An unknown tool.", [call(1, name="python", arguments='{"command": "print(1)"}')]),
        ("Broken JSON.", [call(2, arguments='{"command": "ls"')]),
    ], task))
    results.append(run(out, "toolcall", "costlimit", tc, "swebench", [
        ("Look.", [call(1, "ls")]),
        ("Look more.", [call(2, "cat calc.py")]),
    ], task, cost_limit=1e-9))
    tb = ScriptedTextModel
    block = "```mswea_bash_command\n{}\n```"
    results.append(run(out, "textbased", "submit", tb, "mini_textbased", [
        "THOUGHT: list the files.\n\n" + block.format("ls"),
        "THOUGHT: two actions at once.\n\n" + block.format("cat calc.py") + "\n\n" + block.format("cat README.md"),
        "THOUGHT: I am not sure what to do next \u2014 no action here.",
        "THOUGHT: a failing command.\n\n" + block.format("cat missing_\u00e4.py"),
        "THOUGHT: fix it.\n\n" + block.format(fix),
        "THOUGHT: long output.\n\n" + block.format(LONG),
        "THOUGHT: submit.\n\n" + block.format(SUBMIT),
    ], task))
    rm = ScriptedResponseModel
    results.append(run(out, "response", "submit", rm, "mini", [
        ("Let me look.", [("bash", json.dumps({"command": "cat calc.py"}))], "Read the file first."),
        ("", [("bash", json.dumps({"command": "ls"})), ("bash", json.dumps({"command": "git status"}))], None),
        ("No call here, sorry.", [], None),
        ("Fix.", [("bash", json.dumps({"command": fix}))], "The sign is wrong. \u00bd"),
        ("A failing check.", [("bash", json.dumps({"command": "false"}))], None),
        ("Submit.", [("bash", json.dumps({"command": SUBMIT}))], None),
    ], task))
    # Each style's folder is one batch run: its predictions beside its runs.
    for style in {path.parent.parent.name for path, _ in results}:
        preds = {
            path.parent.name: {
                "instance_id": path.parent.name,
                "model_name_or_path": f"openai/mock-{style}-model",
                "model_patch": r.get("submission", ""),
            }
            for path, r in results
            if path.parent.parent.name == style
        }
        (out / style / "preds.json").write_text(json.dumps(preds, indent=2, sort_keys=True) + "\n")


if __name__ == "__main__":
    main(sys.argv[1])
