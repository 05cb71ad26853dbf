//! A training run: batches drawn deterministically from the packed windows,
//! AdamW with warmup and cosine decay, clipping, held-out loss per mix,
//! checkpoints (weights and optimizer moments as safetensors) from which a
//! run resumes on the exact same curve, the final model directory, a loss
//! curve PNG and a JSON report.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use tch::{Device, Tensor};

use super::data::Window;
use super::model::{Qwen2, Qwen2Config};
use super::optim::{learning_rate, AdamW};
use super::TrainError;

pub const DEFAULT_CONFIG: &str = turnlake::cmd::train::DEFAULT_CONFIG;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelSize {
    pub hidden_size: i64,
    pub intermediate_size: i64,
    pub num_hidden_layers: i64,
    pub num_attention_heads: i64,
    pub num_key_value_heads: i64,
    pub rope_theta: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TrainConfig {
    pub seed: u64,
    pub steps: i64,
    pub batch_size: usize,
    pub seq_len: usize,
    pub lr: f64,
    pub warmup: i64,
    pub min_lr_ratio: f64,
    pub weight_decay: f64,
    pub clip: f64,
    pub eval_every: i64,
    pub checkpoint_every: i64,
    pub heldout_share: f64,
    pub threads: i32,
    pub model: ModelSize,
}

impl TrainConfig {
    pub fn from_toml(text: &str) -> Result<TrainConfig, String> {
        let c: TrainConfig = toml::from_str(text).map_err(|e| e.to_string())?;
        if c.steps < 1 || c.batch_size < 1 || c.seq_len < 2 {
            return Err(
                "steps, batch_size and seq_len must be positive (seq_len at least 2)".into(),
            );
        }
        Ok(c)
    }

    pub fn default_config() -> TrainConfig {
        TrainConfig::from_toml(DEFAULT_CONFIG).expect("data/train.toml is valid")
    }

    pub fn model_config(&self, vocab_size: i64) -> Qwen2Config {
        let m = &self.model;
        Qwen2Config {
            architectures: vec!["Qwen2ForCausalLM".into()],
            model_type: "qwen2".into(),
            vocab_size,
            hidden_size: m.hidden_size,
            intermediate_size: m.intermediate_size,
            num_hidden_layers: m.num_hidden_layers,
            num_attention_heads: m.num_attention_heads,
            num_key_value_heads: m.num_key_value_heads,
            max_position_embeddings: self.seq_len as i64,
            rms_norm_eps: 1e-6,
            rope_theta: m.rope_theta,
            tie_word_embeddings: false,
        }
    }
}

/// What a run needs: packed training windows and held-out windows per mix.
pub struct Dataset {
    pub vocab_size: i64,
    pub train: Vec<Window>,
    pub heldout: BTreeMap<String, Vec<Window>>,
}

/// Where a run is and what it has measured so far (checkpointed with it).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Progress {
    pub step: i64,
    /// Training loss of each step so far (f32, as computed: they read back
    /// from a checkpoint bit for bit).
    pub train_loss: Vec<f32>,
    /// (step, held-out loss) per mix.
    pub heldout_loss: BTreeMap<String, Vec<(i64, f32)>>,
    pub seconds: f64,
    pub tokens: u64,
}

/// The JSON report of a finished run.
#[derive(Debug, Clone, Serialize)]
pub struct RunReport {
    pub config: TrainConfig,
    pub model: Qwen2Config,
    pub parameters: i64,
    pub device: String,
    pub train_windows: usize,
    pub heldout_windows: BTreeMap<String, usize>,
    pub steps: i64,
    pub resumed_from: Option<i64>,
    pub final_train_loss: Option<f32>,
    /// The last held-out loss of each mix.
    pub heldout_loss: BTreeMap<String, f32>,
    pub tokens_per_second: f64,
    pub progress: Progress,
    /// The lake commit and table versions the data was read at.
    pub lake: serde_json::Value,
}

/// A permutation of 0..n for `epoch`, from the seed (SplitMix64 and Fisher-Yates).
pub fn permutation(n: usize, seed: u64, epoch: u64) -> Vec<usize> {
    let mut state = seed ^ epoch.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 0xD1B5_4A32_D192_ED03;
    let mut next = || {
        state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    };
    let mut p: Vec<usize> = (0..n).collect();
    for i in (1..n).rev() {
        p.swap(i, (next() % (i as u64 + 1)) as usize);
    }
    p
}

/// The windows of batch `step`: the run walks epoch-wise permutations.
pub fn batch_at(n: usize, batch_size: usize, seed: u64, step: i64) -> Vec<usize> {
    let start = step as usize * batch_size;
    (start..start + batch_size)
        .map(|k| permutation(n, seed, (k / n) as u64)[k % n])
        .collect()
}

fn tensors(windows: &[&Window], device: Device) -> (Tensor, Tensor) {
    let b = windows.len() as i64;
    let ids: Vec<i64> = windows
        .iter()
        .flat_map(|w| w.inputs().iter().copied())
        .collect();
    let targets: Vec<i64> = windows
        .iter()
        .flat_map(|w| w.targets().iter().copied())
        .collect();
    let t = ids.len() as i64 / b;
    (
        Tensor::from_slice(&ids).view([b, t]).to_device(device),
        Tensor::from_slice(&targets).view([b, t]).to_device(device),
    )
}

/// Mean loss per trained token over `windows`, in batches.
pub fn evaluate(model: &Qwen2, windows: &[Window], batch_size: usize) -> Option<f64> {
    let device = model.vs.device();
    let (mut sum, mut count) = (0.0, 0usize);
    tch::no_grad(|| {
        for chunk in windows.chunks(batch_size) {
            let refs: Vec<&Window> = chunk.iter().collect();
            let n: usize = chunk.iter().map(Window::trained_tokens).sum();
            let (ids, targets) = tensors(&refs, device);
            sum += model.loss(&ids, &targets).double_value(&[]) * n as f64;
            count += n;
        }
    });
    (count > 0).then(|| sum / count as f64)
}

fn checkpoint_dir(out: &Path, step: i64) -> PathBuf {
    out.join("checkpoints").join(format!("step-{step:06}"))
}

/// The newest checkpoint under `out`, if any.
fn latest_checkpoint(out: &Path) -> Option<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(out.join("checkpoints"))
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.join("state.json").exists())
        .collect();
    dirs.sort();
    dirs.pop()
}

fn save_checkpoint(
    model: &Qwen2,
    opt: &AdamW,
    progress: &Progress,
    out: &Path,
) -> Result<(), TrainError> {
    let dir = checkpoint_dir(out, progress.step);
    let tmp = dir.with_extension("partial");
    std::fs::create_dir_all(&tmp)?;
    model.vs.save(tmp.join("model.safetensors"))?;
    opt.save(&tmp.join("optimizer.safetensors"))?;
    std::fs::write(
        tmp.join("state.json"),
        serde_json::to_vec_pretty(progress).expect("json"),
    )?;
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::rename(&tmp, &dir)?;
    Ok(())
}

/// Where and how a run goes.
#[derive(Debug, Clone)]
pub struct RunOptions {
    pub device: Device,
    /// The run folder.
    pub out: PathBuf,
    /// Continue from the newest checkpoint in `out`.
    pub resume: bool,
    /// End the run early (at a checkpoint) for time-sliced jobs.
    pub stop_after: Option<i64>,
    /// The lake commit and table versions the data was read at, for the report.
    pub lake: serde_json::Value,
}

impl RunOptions {
    pub fn new(device: Device, out: &Path, lake: serde_json::Value) -> RunOptions {
        RunOptions {
            device,
            out: out.to_path_buf(),
            resume: false,
            stop_after: None,
            lake,
        }
    }
}

/// Train on `data` as `opts` says; `on_step` sees each finished step.
pub fn train(
    data: &Dataset,
    cfg: &TrainConfig,
    opts: &RunOptions,
    on_step: &dyn Fn(i64),
) -> Result<RunReport, TrainError> {
    if data.train.is_empty() {
        return Err(TrainError::Data(
            "no training windows: the mix has no train turns".into(),
        ));
    }
    let (device, out, resume, stop_after) = (
        opts.device,
        opts.out.as_path(),
        opts.resume,
        opts.stop_after,
    );
    tch::set_num_threads(cfg.threads);
    let config = cfg.model_config(data.vocab_size);
    let mut model =
        Qwen2::new(config.clone(), device, cfg.seed as i64).map_err(TrainError::Data)?;
    let mut opt = AdamW::new(&model.vs, cfg.weight_decay);
    let mut progress = Progress::default();
    let mut resumed_from = None;
    if resume {
        if let Some(dir) = latest_checkpoint(out) {
            progress = serde_json::from_slice(&std::fs::read(dir.join("state.json"))?)
                .map_err(|e| TrainError::Data(format!("{}: {e}", dir.display())))?;
            model.vs.load(dir.join("model.safetensors"))?;
            opt.load(&dir.join("optimizer.safetensors"), progress.step)
                .map_err(TrainError::Data)?;
            resumed_from = Some(progress.step);
        }
    }
    std::fs::create_dir_all(out)?;
    let until = stop_after.map_or(cfg.steps, |s| s.min(cfg.steps));
    let started = std::time::Instant::now();
    let seconds_before = progress.seconds;
    while progress.step < until {
        let step = progress.step;
        let picked: Vec<&Window> = batch_at(data.train.len(), cfg.batch_size, cfg.seed, step)
            .into_iter()
            .map(|i| &data.train[i])
            .collect();
        let (ids, targets) = tensors(&picked, device);
        // Mixed precision on CUDA (libtorch's autocast; a no-op on CPU).
        let loss = tch::autocast(device.is_cuda(), || model.loss(&ids, &targets));
        opt.zero_grad();
        loss.backward();
        opt.clip_grad_norm(cfg.clip);
        opt.step(learning_rate(
            step,
            cfg.steps,
            cfg.warmup,
            cfg.lr,
            cfg.min_lr_ratio,
        ));
        progress.train_loss.push(loss.double_value(&[]) as f32);
        progress.tokens += (cfg.batch_size * cfg.seq_len) as u64;
        progress.step += 1;
        let done = progress.step == cfg.steps;
        if progress.step % cfg.eval_every.max(1) == 0 || done {
            for (mix, windows) in &data.heldout {
                if let Some(l) = evaluate(&model, windows, cfg.batch_size) {
                    progress
                        .heldout_loss
                        .entry(mix.clone())
                        .or_default()
                        .push((progress.step, l as f32));
                }
            }
        }
        progress.seconds = seconds_before + started.elapsed().as_secs_f64();
        if progress.step % cfg.checkpoint_every.max(1) == 0 || done || progress.step == until {
            save_checkpoint(&model, &opt, &progress, out)?;
        }
        on_step(progress.step);
    }
    if progress.step == cfg.steps {
        model
            .save_dir(&out.join("model"))
            .map_err(TrainError::Data)?;
    }
    let mut series: Vec<(String, Vec<(i64, f64)>)> = vec![(
        "train".into(),
        progress
            .train_loss
            .iter()
            .enumerate()
            .map(|(i, l)| (i as i64 + 1, *l as f64))
            .collect(),
    )];
    for (mix, points) in &progress.heldout_loss {
        series.push((
            format!("held-out {mix}"),
            points.iter().map(|(s, l)| (*s, *l as f64)).collect(),
        ));
    }
    let refs: Vec<turnlake::plot::LossSeries> = series
        .iter()
        .map(|(n, s)| (n.as_str(), s.clone()))
        .collect();
    turnlake::plot::loss_curve(&refs, &out.join("loss.png"))
        .map_err(|e| TrainError::Data(format!("plotting the loss curve: {e}")))?;
    let parameters = model
        .vs
        .trainable_variables()
        .iter()
        .map(|t| t.numel() as i64)
        .sum();
    let report = RunReport {
        config: cfg.clone(),
        model: config,
        parameters,
        device: format!("{device:?}"),
        train_windows: data.train.len(),
        heldout_windows: data
            .heldout
            .iter()
            .map(|(m, w)| (m.clone(), w.len()))
            .collect(),
        steps: progress.step,
        resumed_from,
        final_train_loss: progress.train_loss.last().copied(),
        heldout_loss: progress
            .heldout_loss
            .iter()
            .filter_map(|(m, p)| p.last().map(|(_, l)| (m.clone(), *l)))
            .collect(),
        tokens_per_second: progress.tokens as f64 / progress.seconds.max(1e-9),
        progress,
        lake: opts.lake.clone(),
    };
    std::fs::write(
        out.join("report.json"),
        serde_json::to_vec_pretty(&report).expect("json"),
    )?;
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batches_walk_every_window_once_per_epoch() {
        let mut seen: Vec<usize> = (0..5).flat_map(|s| batch_at(10, 2, 3, s)).collect();
        seen.sort();
        assert_eq!(seen, (0..10).collect::<Vec<_>>());
        assert_eq!(batch_at(10, 2, 3, 7), batch_at(10, 2, 3, 7));
        assert_ne!(permutation(10, 3, 0), permutation(10, 3, 1));
    }
}

#[cfg(test)]
mod training_tests {
    use super::*;
    use crate::train::data::{Window, IGNORE};

    fn cfg(steps: i64) -> TrainConfig {
        TrainConfig {
            seed: 5,
            steps,
            batch_size: 2,
            seq_len: 8,
            lr: 1e-2,
            warmup: 2,
            min_lr_ratio: 0.1,
            weight_decay: 0.0,
            clip: 1.0,
            eval_every: 4,
            checkpoint_every: 4,
            heldout_share: 0.0,
            threads: 1,
            model: ModelSize {
                hidden_size: 32,
                intermediate_size: 64,
                num_hidden_layers: 1,
                num_attention_heads: 4,
                num_key_value_heads: 2,
                rope_theta: 10000.0,
            },
        }
    }

    fn data() -> Dataset {
        let window = |k: i64| {
            let ids: Vec<i64> = (0..9).map(|i| (i * 3 + k) % 20).collect();
            let labels: Vec<i64> = ids
                .iter()
                .enumerate()
                .map(|(i, &t)| if i % 2 == 0 { t } else { IGNORE })
                .collect();
            Window { ids, labels }
        };
        Dataset {
            vocab_size: 20,
            train: vec![window(0), window(1)],
            heldout: BTreeMap::from([("credit".to_string(), vec![window(2)])]),
        }
    }

    fn opts(dir: &Path) -> RunOptions {
        RunOptions::new(Device::Cpu, dir, serde_json::Value::Null)
    }

    #[test]
    fn loss_falls_on_a_fixed_batch() {
        let dir = tempfile::tempdir().unwrap();
        let r = train(&data(), &cfg(40), &opts(dir.path()), &|_| {}).unwrap();
        let first = r.progress.train_loss[0];
        let last = *r.progress.train_loss.last().unwrap();
        assert!(last < 0.3 * first, "{first} -> {last}");
        assert!(dir.path().join("model/model.safetensors").exists());
        assert!(dir.path().join("loss.png").exists());
        assert!(r.heldout_loss.contains_key("credit"));
    }

    #[test]
    fn a_resumed_run_continues_the_exact_curve() {
        let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let straight = train(&data(), &cfg(12), &opts(a.path()), &|_| {}).unwrap();
        let stopped = RunOptions {
            stop_after: Some(5),
            ..opts(b.path())
        };
        let first = train(&data(), &cfg(12), &stopped, &|_| {}).unwrap();
        assert_eq!(first.steps, 5);
        let resuming = RunOptions {
            resume: true,
            ..opts(b.path())
        };
        let resumed = train(&data(), &cfg(12), &resuming, &|_| {}).unwrap();
        assert_eq!(resumed.resumed_from, Some(5));
        assert_eq!(resumed.progress.train_loss, straight.progress.train_loss);
        assert_eq!(resumed.heldout_loss, straight.heldout_loss);
    }
}
