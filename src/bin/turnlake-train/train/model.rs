//! A Qwen2-architecture decoder in tch: token embeddings, layers of RMSNorm,
//! grouped-query attention with rotary position embeddings and a SwiGLU
//! MLP, a final norm and the LM head. Configured from a Hugging Face style
//! `config.json`; weights are named as Hugging Face names them
//! (`model.layers.0.self_attn.q_proj.weight`), so a model directory
//! (config.json + model.safetensors) that turnlake writes loads back through
//! the same code path.

use serde::{Deserialize, Serialize};
use std::path::Path;
use tch::nn::{self, Module};
use tch::{Device, Kind, Tensor};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Qwen2Config {
    #[serde(default = "architectures")]
    pub architectures: Vec<String>,
    #[serde(default = "model_type")]
    pub model_type: String,
    pub vocab_size: i64,
    pub hidden_size: i64,
    pub intermediate_size: i64,
    pub num_hidden_layers: i64,
    pub num_attention_heads: i64,
    pub num_key_value_heads: i64,
    pub max_position_embeddings: i64,
    #[serde(default = "rms_norm_eps")]
    pub rms_norm_eps: f64,
    #[serde(default = "rope_theta")]
    pub rope_theta: f64,
    #[serde(default)]
    pub tie_word_embeddings: bool,
}

fn architectures() -> Vec<String> {
    vec!["Qwen2ForCausalLM".into()]
}
fn model_type() -> String {
    "qwen2".into()
}
fn rms_norm_eps() -> f64 {
    1e-6
}
fn rope_theta() -> f64 {
    10000.0
}

impl Qwen2Config {
    pub fn head_dim(&self) -> i64 {
        self.hidden_size / self.num_attention_heads
    }

    pub fn check(&self) -> Result<(), String> {
        if self.hidden_size % self.num_attention_heads != 0 {
            return Err("hidden_size must be a multiple of num_attention_heads".into());
        }
        if self.num_attention_heads % self.num_key_value_heads != 0 {
            return Err("num_attention_heads must be a multiple of num_key_value_heads".into());
        }
        if self.head_dim() % 2 != 0 {
            return Err("the head dimension must be even (rotary embeddings)".into());
        }
        Ok(())
    }
}

#[derive(Debug)]
struct RmsNorm {
    weight: Tensor,
    eps: f64,
}

impl RmsNorm {
    fn new(p: nn::Path, size: i64, eps: f64) -> RmsNorm {
        RmsNorm {
            weight: p.var("weight", &[size], nn::Init::Const(1.0)),
            eps,
        }
    }
}

impl Module for RmsNorm {
    fn forward(&self, x: &Tensor) -> Tensor {
        let var = x.pow_tensor_scalar(2).mean_dim(-1, true, Kind::Float);
        x * (var + self.eps).rsqrt() * &self.weight
    }
}

fn linear(p: nn::Path, inputs: i64, outputs: i64, bias: bool) -> nn::Linear {
    nn::linear(
        p,
        inputs,
        outputs,
        nn::LinearConfig {
            bias,
            ..Default::default()
        },
    )
}

struct Attention {
    q: nn::Linear,
    k: nn::Linear,
    v: nn::Linear,
    o: nn::Linear,
    heads: i64,
    kv_heads: i64,
    head_dim: i64,
}

/// The second half of the last dimension, negated, then the first half.
fn rotate_half(x: &Tensor) -> Tensor {
    let half = x.size()[x.dim() - 1] / 2;
    Tensor::cat(&[-x.narrow(-1, half, half), x.narrow(-1, 0, half)], -1)
}

impl Attention {
    fn new(p: nn::Path, c: &Qwen2Config) -> Attention {
        let hd = c.head_dim();
        Attention {
            q: linear(
                &p / "q_proj",
                c.hidden_size,
                c.num_attention_heads * hd,
                true,
            ),
            k: linear(
                &p / "k_proj",
                c.hidden_size,
                c.num_key_value_heads * hd,
                true,
            ),
            v: linear(
                &p / "v_proj",
                c.hidden_size,
                c.num_key_value_heads * hd,
                true,
            ),
            o: linear(
                &p / "o_proj",
                c.num_attention_heads * hd,
                c.hidden_size,
                false,
            ),
            heads: c.num_attention_heads,
            kv_heads: c.num_key_value_heads,
            head_dim: hd,
        }
    }

    fn forward(&self, x: &Tensor, cos: &Tensor, sin: &Tensor) -> Tensor {
        let (b, t, _) = x.size3().expect("[batch, time, hidden]");
        let split = |y: Tensor, heads: i64| y.view([b, t, heads, self.head_dim]).transpose(1, 2);
        let q = split(self.q.forward(x), self.heads);
        let k = split(self.k.forward(x), self.kv_heads);
        let v = split(self.v.forward(x), self.kv_heads);
        let q = &q * cos + rotate_half(&q) * sin;
        let k = &k * cos + rotate_half(&k) * sin;
        // Grouped-query attention: each key/value head serves `heads / kv_heads` query heads.
        let repeat = |y: Tensor| {
            let n = self.heads / self.kv_heads;
            y.unsqueeze(2)
                .expand([b, self.kv_heads, n, t, self.head_dim], false)
                .reshape([b, self.heads, t, self.head_dim])
        };
        let y = Tensor::scaled_dot_product_attention(
            &q,
            &repeat(k),
            &repeat(v),
            None::<Tensor>,
            0.0,
            true,
            None,
            false,
        );
        self.o.forward(
            &y.transpose(1, 2)
                .contiguous()
                .view([b, t, self.heads * self.head_dim]),
        )
    }
}

struct Layer {
    input_norm: RmsNorm,
    attention: Attention,
    post_norm: RmsNorm,
    gate: nn::Linear,
    up: nn::Linear,
    down: nn::Linear,
}

impl Layer {
    fn new(p: nn::Path, c: &Qwen2Config) -> Layer {
        let mlp = &p / "mlp";
        Layer {
            input_norm: RmsNorm::new(&p / "input_layernorm", c.hidden_size, c.rms_norm_eps),
            attention: Attention::new(&p / "self_attn", c),
            post_norm: RmsNorm::new(
                &p / "post_attention_layernorm",
                c.hidden_size,
                c.rms_norm_eps,
            ),
            gate: linear(
                &mlp / "gate_proj",
                c.hidden_size,
                c.intermediate_size,
                false,
            ),
            up: linear(&mlp / "up_proj", c.hidden_size, c.intermediate_size, false),
            down: linear(
                &mlp / "down_proj",
                c.intermediate_size,
                c.hidden_size,
                false,
            ),
        }
    }

    fn forward(&self, x: &Tensor, cos: &Tensor, sin: &Tensor) -> Tensor {
        let x = x + self
            .attention
            .forward(&self.input_norm.forward(x), cos, sin);
        let h = self.post_norm.forward(&x);
        let mlp = self
            .down
            .forward(&(self.gate.forward(&h).silu() * self.up.forward(&h)));
        x + mlp
    }
}

/// The model, its variables in a VarStore.
pub struct Qwen2 {
    pub config: Qwen2Config,
    pub vs: nn::VarStore,
    embed: nn::Embedding,
    layers: Vec<Layer>,
    norm: RmsNorm,
    lm_head: Option<nn::Linear>,
}

impl Qwen2 {
    /// A freshly initialized model on `device`, its weights drawn from
    /// `seed`. libtorch's generator is global to the process, so seeding and
    /// drawing hold one lock: models built at the same time on other threads
    /// cannot take draws from each other.
    pub fn new(config: Qwen2Config, device: Device, seed: i64) -> Result<Qwen2, String> {
        static INIT: std::sync::Mutex<()> = std::sync::Mutex::new(());
        let _drawing = INIT.lock().unwrap_or_else(|e| e.into_inner());
        tch::manual_seed(seed);
        config.check()?;
        let vs = nn::VarStore::new(device);
        let root = vs.root();
        let model = &root / "model";
        let embed = nn::embedding(
            &model / "embed_tokens",
            config.vocab_size,
            config.hidden_size,
            nn::EmbeddingConfig {
                ws_init: nn::Init::Randn {
                    mean: 0.0,
                    stdev: 0.02,
                },
                ..Default::default()
            },
        );
        let layers = (0..config.num_hidden_layers)
            .map(|i| Layer::new(&model / "layers" / i, &config))
            .collect();
        let norm = RmsNorm::new(&model / "norm", config.hidden_size, config.rms_norm_eps);
        let lm_head = (!config.tie_word_embeddings).then(|| {
            linear(
                &root / "lm_head",
                config.hidden_size,
                config.vocab_size,
                false,
            )
        });
        Ok(Qwen2 {
            config,
            vs,
            embed,
            layers,
            norm,
            lm_head,
        })
    }

    /// Rotary cos and sin for positions 0..t, shaped to broadcast over [b, heads, t, head_dim].
    fn rotary(&self, t: i64, device: Device) -> (Tensor, Tensor) {
        let hd = self.config.head_dim();
        let inv = Tensor::arange_start_step(0, hd, 2, (Kind::Float, device))
            .divide_scalar(hd as f64)
            .multiply_scalar(-(self.config.rope_theta.ln()))
            .exp();
        let pos = Tensor::arange(t, (Kind::Float, device));
        let freqs = pos.unsqueeze(1) * inv.unsqueeze(0);
        let emb = Tensor::cat(&[&freqs, &freqs], -1);
        (emb.cos().view([1, 1, t, hd]), emb.sin().view([1, 1, t, hd]))
    }

    /// Logits [batch, time, vocab] of token ids [batch, time].
    pub fn forward(&self, ids: &Tensor) -> Tensor {
        let (_, t) = ids.size2().expect("[batch, time]");
        let (cos, sin) = self.rotary(t, ids.device());
        let mut x = self.embed.forward(ids);
        for layer in &self.layers {
            x = layer.forward(&x, &cos, &sin);
        }
        let x = self.norm.forward(&x);
        match &self.lm_head {
            Some(head) => head.forward(&x),
            None => x.matmul(&self.embed.ws.tr()),
        }
    }

    /// Mean cross-entropy of the next-token predictions over labels that are not -100.
    pub fn loss(&self, ids: &Tensor, labels: &Tensor) -> Tensor {
        let logits = self.forward(ids);
        let v = self.config.vocab_size;
        logits
            .view([-1, v])
            .to_kind(Kind::Float)
            .cross_entropy_loss::<Tensor>(&labels.view([-1]), None, tch::Reduction::Mean, -100, 0.0)
    }

    /// Write a model directory: config.json and model.safetensors.
    pub fn save_dir(&self, dir: &Path) -> Result<(), String> {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let config = serde_json::to_vec_pretty(&self.config).expect("config serializes");
        std::fs::write(dir.join("config.json"), config)
            .map_err(|e| format!("{}: {e}", dir.display()))?;
        self.vs
            .save(dir.join("model.safetensors"))
            .map_err(|e| format!("{}: {e}", dir.display()))
    }

    /// Load a model directory (config.json + model.safetensors).
    #[cfg(test)]
    pub fn load_dir(dir: &Path, device: Device) -> Result<Qwen2, String> {
        let text = std::fs::read(dir.join("config.json"))
            .map_err(|e| format!("{}: {e}", dir.join("config.json").display()))?;
        let config: Qwen2Config = serde_json::from_slice(&text)
            .map_err(|e| format!("{}: {e}", dir.join("config.json").display()))?;
        let mut model = Qwen2::new(config, device, 0)?;
        model
            .vs
            .load(dir.join("model.safetensors"))
            .map_err(|e| format!("{}: {e}", dir.join("model.safetensors").display()))?;
        Ok(model)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    pub fn tiny(vocab: i64) -> Qwen2Config {
        Qwen2Config {
            architectures: architectures(),
            model_type: model_type(),
            vocab_size: vocab,
            hidden_size: 32,
            intermediate_size: 64,
            num_hidden_layers: 2,
            num_attention_heads: 4,
            num_key_value_heads: 2,
            max_position_embeddings: 16,
            rms_norm_eps: 1e-6,
            rope_theta: 10000.0,
            tie_word_embeddings: false,
        }
    }

    #[test]
    fn a_model_directory_round_trips() {
        let model = Qwen2::new(tiny(50), Device::Cpu, 1).unwrap();
        let dir = tempfile::tempdir().unwrap();
        model.save_dir(dir.path()).unwrap();
        let config: serde_json::Value =
            serde_json::from_slice(&std::fs::read(dir.path().join("config.json")).unwrap())
                .unwrap();
        assert_eq!(config["model_type"], "qwen2");
        assert_eq!(config["num_key_value_heads"], 2);
        let names = Tensor::read_safetensors(dir.path().join("model.safetensors")).unwrap();
        assert!(names
            .iter()
            .any(|(n, _)| n == "model.layers.1.self_attn.k_proj.bias"));
        assert!(names.iter().any(|(n, _)| n == "model.embed_tokens.weight"));
        let loaded = Qwen2::load_dir(dir.path(), Device::Cpu).unwrap();
        let ids = Tensor::from_slice(&[1i64, 5, 7, 9, 3, 2]).view([2, 3]);
        let a = tch::no_grad(|| model.forward(&ids));
        let b = tch::no_grad(|| loaded.forward(&ids));
        assert_eq!(a.size(), vec![2, 3, 50]);
        assert!(
            a.allclose(&b, 0.0, 0.0, false),
            "the loaded model computes the same logits"
        );
    }

    #[test]
    fn masked_targets_get_zero_gradient_and_causality_holds() {
        let model = Qwen2::new(tiny(30), Device::Cpu, 3).unwrap();
        let ids = Tensor::from_slice(&[1i64, 4, 9, 2, 7, 3]).view([1, 6]);
        let logits = model.forward(&ids).detach().set_requires_grad(true);
        let targets = Tensor::from_slice(&[-100i64, 9, -100, 7, -100, 5]);
        let loss = logits.view([-1, 30]).cross_entropy_loss::<Tensor>(
            &targets,
            None,
            tch::Reduction::Mean,
            -100,
            0.0,
        );
        loss.backward();
        let grad = logits.grad().view([6, 30]);
        for masked in [0i64, 2, 4] {
            assert_eq!(
                grad.get(masked).abs().sum(Kind::Double).double_value(&[]),
                0.0
            );
        }
        assert!(grad.get(1).abs().sum(Kind::Double).double_value(&[]) > 0.0);
        // A later token does not change an earlier position's logits.
        let changed = Tensor::from_slice(&[1i64, 4, 9, 2, 7, 8]).view([1, 6]);
        let (a, b) = tch::no_grad(|| (model.forward(&ids), model.forward(&changed)));
        assert!(a
            .narrow(1, 0, 5)
            .allclose(&b.narrow(1, 0, 5), 1e-6, 1e-6, false));
    }
}
