//! AdamW with decoupled weight decay, kept as plain tensors so its moments
//! are checkpointed with the weights and a resumed run continues the exact
//! same curve; linear warmup then cosine decay; global-norm gradient clipping.

use std::path::Path;
use tch::{Kind, Tensor};

pub struct AdamW {
    /// (name, parameter), sorted by name.
    params: Vec<(String, Tensor)>,
    m: Vec<Tensor>,
    v: Vec<Tensor>,
    pub step: i64,
    beta1: f64,
    beta2: f64,
    eps: f64,
    weight_decay: f64,
}

impl AdamW {
    pub fn new(vs: &tch::nn::VarStore, weight_decay: f64) -> AdamW {
        let mut params: Vec<(String, Tensor)> = vs.variables().into_iter().collect();
        params.sort_by(|a, b| a.0.cmp(&b.0));
        let zeros = |p: &Tensor| p.zeros_like().detach();
        AdamW {
            m: params.iter().map(|(_, p)| zeros(p)).collect(),
            v: params.iter().map(|(_, p)| zeros(p)).collect(),
            params,
            step: 0,
            beta1: 0.9,
            beta2: 0.95,
            eps: 1e-8,
            weight_decay,
        }
    }

    pub fn zero_grad(&mut self) {
        for (_, p) in &mut self.params {
            p.zero_grad();
        }
    }

    /// Scale gradients so their global norm is at most `max`; the norm before.
    pub fn clip_grad_norm(&mut self, max: f64) -> f64 {
        tch::no_grad(|| {
            let mut total = 0.0;
            for (_, p) in &self.params {
                let g = p.grad();
                if g.defined() {
                    total += g.pow_tensor_scalar(2).sum(Kind::Double).double_value(&[]);
                }
            }
            let norm = total.sqrt();
            if norm > max {
                let scale = max / (norm + 1e-6);
                for (_, p) in &self.params {
                    let mut g = p.grad();
                    if g.defined() {
                        let _ = g.g_mul_scalar_(scale);
                    }
                }
            }
            norm
        })
    }

    /// One update at learning rate `lr`. Norms and biases (1-D) are not decayed.
    pub fn step(&mut self, lr: f64) {
        self.step += 1;
        let (b1, b2) = (self.beta1, self.beta2);
        let c1 = 1.0 - b1.powi(self.step as i32);
        let c2 = 1.0 - b2.powi(self.step as i32);
        tch::no_grad(|| {
            for (i, (_, p)) in self.params.iter_mut().enumerate() {
                let g = p.grad();
                if !g.defined() {
                    continue;
                }
                let _ = self.m[i].g_mul_scalar_(b1).g_add_(&(&g * (1.0 - b1)));
                let _ = self.v[i]
                    .g_mul_scalar_(b2)
                    .g_add_(&(g.square() * (1.0 - b2)));
                if p.dim() > 1 {
                    let _ = p.g_mul_scalar_(1.0 - lr * self.weight_decay);
                }
                let update = (&self.m[i] / c1) / ((&self.v[i] / c2).sqrt() + self.eps);
                let _ = p.g_sub_(&(update * lr));
            }
        });
    }

    /// The moments, for a checkpoint.
    pub fn save(&self, path: &Path) -> Result<(), tch::TchError> {
        let mut named: Vec<(String, &Tensor)> = Vec::new();
        for (i, (name, _)) in self.params.iter().enumerate() {
            named.push((format!("m.{name}"), &self.m[i]));
            named.push((format!("v.{name}"), &self.v[i]));
        }
        let refs: Vec<(&str, &Tensor)> = named.iter().map(|(n, t)| (n.as_str(), *t)).collect();
        Tensor::write_safetensors(&refs, path)
    }

    /// Restore the moments a checkpoint saved, and the step count.
    pub fn load(&mut self, path: &Path, step: i64) -> Result<(), String> {
        let tensors =
            Tensor::read_safetensors(path).map_err(|e| format!("{}: {e}", path.display()))?;
        let by_name: std::collections::HashMap<String, Tensor> = tensors.into_iter().collect();
        for (i, (name, _)) in self.params.iter().enumerate() {
            for (prefix, slot) in [("m", &mut self.m[i]), ("v", &mut self.v[i])] {
                let t = by_name
                    .get(&format!("{prefix}.{name}"))
                    .ok_or_else(|| format!("{}: no {prefix}.{name}", path.display()))?;
                tch::no_grad(|| slot.copy_(t));
            }
        }
        self.step = step;
        Ok(())
    }
}

/// Learning rate at `step` (0-based): linear warmup to `peak`, then cosine
/// decay to `peak * min_ratio` at `total`.
pub fn learning_rate(step: i64, total: i64, warmup: i64, peak: f64, min_ratio: f64) -> f64 {
    if step < warmup {
        return peak * (step + 1) as f64 / warmup as f64;
    }
    let span = (total - warmup).max(1) as f64;
    let progress = ((step - warmup) as f64 / span).clamp(0.0, 1.0);
    let cosine = 0.5 * (1.0 + (std::f64::consts::PI * progress).cos());
    peak * (min_ratio + (1.0 - min_ratio) * cosine)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn warmup_then_cosine() {
        assert_eq!(learning_rate(0, 100, 10, 1.0, 0.1), 0.1);
        assert_eq!(learning_rate(9, 100, 10, 1.0, 0.1), 1.0);
        assert!((learning_rate(10, 100, 10, 1.0, 0.1) - 1.0).abs() < 1e-12);
        assert!((learning_rate(100, 100, 10, 1.0, 0.1) - 0.1).abs() < 1e-12);
        assert!((learning_rate(55, 100, 10, 1.0, 0.1) - 0.55).abs() < 1e-12);
    }
}
