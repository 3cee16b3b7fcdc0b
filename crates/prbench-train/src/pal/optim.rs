//! PyTorch's `torch.optim.Adam` and `torch.optim.AdamW` on candle variables, with parameter
//! groups: what the PAL authors train with (their Lightning module's `configure_optimizers`:
//! `optim.Adam(parameter_groups)` for training, `optim.AdamW(W params)` for a new user).
//!
//! Semantics, as in torch 2.x's single-tensor implementation (the CPU default):
//! - each parameter has its own state (first and second moments, step count), created at its
//!   first step;
//! - a parameter without a gradient in a step (absent from the [`GradStore`]: it took no part in
//!   the loss, like the authors' per-user weights of a user not in the batch, whose gradient is
//!   `None` after `zero_grad(set_to_none=True)`) takes no step, and its step count waits;
//! - a parameter that took part gets a step even when its gradient is zero;
//! - Adam's weight decay is L2 (added to the gradient: `g + wd·θ`); AdamW's is decoupled
//!   (`θ ← θ·(1 − lr·wd)` before the Adam update);
//! - update: `m ← β₁m + (1−β₁)g`, `v ← β₂v + (1−β₂)g²`,
//!   `θ ← θ − lr/(1−β₁ᵗ) · m / (√v/√(1−β₂ᵗ) + ε)`.
//!
//! Arithmetic is in the parameter's dtype, like torch's.

use candle_core::backprop::GradStore;
use candle_core::{Result, Var};

/// Adam's hyper-parameters shared by all groups (torch defaults: β = (0.9, 0.999), ε = 1e-8).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AdamSettings {
    /// β₁, β₂.
    pub betas: (f64, f64),
    /// ε, added to the bias-corrected √v.
    pub eps: f64,
    /// `false`: torch `Adam` (L2 weight decay added to the gradient); `true`: torch `AdamW`
    /// (decoupled weight decay).
    pub decoupled: bool,
}

impl Default for AdamSettings {
    fn default() -> Self {
        Self { betas: (0.9, 0.999), eps: 1e-8, decoupled: false }
    }
}

/// A parameter group: its own learning rate and weight decay (torch's `{"params": …, "lr": …,
/// "weight_decay": …}`).
#[derive(Debug, Clone)]
pub struct ParamGroup {
    /// Name, for messages and records (e.g. `projector`, `W`).
    pub name: String,
    /// Learning rate.
    pub lr: f64,
    /// Weight decay (L2 for Adam, decoupled for AdamW).
    pub weight_decay: f64,
    /// The parameters.
    pub params: Vec<Var>,
}

#[derive(Debug)]
struct State {
    step: u64,
    m: Var,
    v: Var,
}

/// torch's Adam / AdamW over parameter groups (module docs).
#[derive(Debug)]
pub struct TorchAdam {
    groups: Vec<ParamGroup>,
    settings: AdamSettings,
    state: Vec<Vec<Option<State>>>,
}

impl TorchAdam {
    /// An optimizer over `groups`.
    pub fn new(groups: Vec<ParamGroup>, settings: AdamSettings) -> Self {
        let state = groups.iter().map(|g| g.params.iter().map(|_| None).collect()).collect();
        Self { groups, settings, state }
    }

    /// The groups.
    pub fn groups(&self) -> &[ParamGroup] {
        &self.groups
    }

    /// Steps taken by parameter `index` of group `group` (0 before its first gradient).
    pub fn steps_of(&self, group: usize, index: usize) -> u64 {
        self.state[group][index].as_ref().map_or(0, |s| s.step)
    }

    /// One optimizer step: every parameter with a gradient in `grads` is updated; the others are
    /// left alone, state included. Returns how many parameters were updated.
    ///
    /// # Errors
    /// Candle errors (shape or dtype mismatch between a parameter and its gradient).
    pub fn step(&mut self, grads: &GradStore) -> Result<usize> {
        let (beta1, beta2) = self.settings.betas;
        let mut updated = 0;
        for (group, states) in self.groups.iter().zip(self.state.iter_mut()) {
            for (param, state) in group.params.iter().zip(states.iter_mut()) {
                let Some(grad) = grads.get(param.as_tensor()) else {
                    continue;
                };
                let theta = param.as_tensor().detach();
                let grad = grad.detach();
                let st = match state {
                    Some(s) => s,
                    None => state.insert(State {
                        step: 0,
                        m: Var::zeros(theta.shape(), theta.dtype(), theta.device())?,
                        v: Var::zeros(theta.shape(), theta.dtype(), theta.device())?,
                    }),
                };
                st.step += 1;
                let wd = group.weight_decay;
                let (theta, grad) = if wd == 0.0 {
                    (theta, grad)
                } else if self.settings.decoupled {
                    ((&theta * (1.0 - group.lr * wd))?, grad)
                } else {
                    let g = (&grad + (&theta * wd)?)?;
                    (theta, g)
                };
                let m = ((st.m.as_tensor() * beta1)? + (&grad * (1.0 - beta1))?)?;
                let v = ((st.v.as_tensor() * beta2)? + (grad.sqr()? * (1.0 - beta2))?)?;
                let t = st.step as i32;
                let bias1 = 1.0 - beta1.powi(t);
                let bias2_sqrt = (1.0 - beta2.powi(t)).sqrt();
                let denom = ((v.sqrt()? / bias2_sqrt)? + self.settings.eps)?;
                let next = (theta - ((&m / &denom)? * (group.lr / bias1))?)?;
                st.m.set(&m)?;
                st.v.set(&v)?;
                param.set(&next)?;
                updated += 1;
            }
        }
        Ok(updated)
    }
}

#[cfg(test)]
mod tests {
    use candle_core::{Device, Tensor};

    use super::*;

    fn var(v: &[f64]) -> Var {
        Var::from_tensor(&Tensor::new(v, &Device::Cpu).unwrap()).unwrap()
    }

    fn values(v: &Var) -> Vec<f64> {
        v.as_tensor().to_vec1::<f64>().unwrap()
    }

    /// Two steps of torch.optim.Adam(lr=0.1, weight_decay=0.5) on loss = sum(x²·c), by hand.
    #[test]
    fn adam_with_l2_decay_by_hand() {
        let x = var(&[1.0, -2.0]);
        let c = Tensor::new(&[3.0f64, 0.5], &Device::Cpu).unwrap();
        let group =
            ParamGroup { name: "x".into(), lr: 0.1, weight_decay: 0.5, params: vec![x.clone()] };
        let mut opt = TorchAdam::new(vec![group], AdamSettings::default());
        let (mut m, mut v, mut p) = ([0.0f64; 2], [0.0f64; 2], [1.0f64, -2.0]);
        let cv = [3.0, 0.5];
        for t in 1..=2 {
            let loss = (x.as_tensor().sqr().unwrap() * &c).unwrap().sum_all().unwrap();
            assert_eq!(opt.step(&loss.backward().unwrap()).unwrap(), 1);
            for i in 0..2 {
                let g = 2.0 * cv[i] * p[i] + 0.5 * p[i];
                m[i] = 0.9 * m[i] + 0.1 * g;
                v[i] = 0.999 * v[i] + 0.001 * g * g;
                let denom = v[i].sqrt() / (1.0 - 0.999f64.powi(t)).sqrt() + 1e-8;
                p[i] -= 0.1 / (1.0 - 0.9f64.powi(t)) * m[i] / denom;
            }
            for (a, b) in values(&x).iter().zip(&p) {
                assert!((a - b).abs() < 1e-12, "step {t}: {a} vs {b}");
            }
        }
        assert_eq!(opt.steps_of(0, 0), 2);
    }

    /// AdamW decays θ by (1 − lr·wd) before the update; Adam adds wd·θ to the gradient.
    #[test]
    fn adamw_decays_the_weights_not_the_gradient() {
        let run = |decoupled: bool| {
            let x = var(&[2.0]);
            let group = ParamGroup {
                name: "x".into(),
                lr: 0.1,
                weight_decay: 0.5,
                params: vec![x.clone()],
            };
            let mut opt =
                TorchAdam::new(vec![group], AdamSettings { decoupled, ..AdamSettings::default() });
            let loss = (x.as_tensor() * 3.0).unwrap().sum_all().unwrap();
            opt.step(&loss.backward().unwrap()).unwrap();
            values(&x)[0]
        };
        // First step: m̂/√v̂ = sign(g) (up to ε), so Adam moves by lr whatever the decay …
        assert!((run(false) - (2.0 - 0.1)).abs() < 1e-6);
        // … while AdamW first shrinks θ: 2·(1 − 0.05) − 0.1.
        assert!((run(true) - (2.0 * 0.95 - 0.1)).abs() < 1e-6);
    }

    /// A parameter outside the loss takes no step and keeps its step count; one inside with a
    /// zero gradient does step (its moments decay).
    #[test]
    fn absent_parameters_wait() {
        let (a, b, z) = (var(&[1.0]), var(&[1.0]), var(&[1.0]));
        let group = ParamGroup {
            name: "W".into(),
            lr: 0.1,
            weight_decay: 0.0,
            params: vec![a.clone(), b.clone(), z.clone()],
        };
        let mut opt = TorchAdam::new(vec![group], AdamSettings::default());
        // (Multiplying by the scalar 0.0 would not do: candle prunes a zero affine from the graph.)
        let zero = Tensor::new(&[0.0f64], &Device::Cpu).unwrap();
        for _ in 0..3 {
            let loss = ((a.as_tensor() * 2.0).unwrap() + (z.as_tensor() * &zero).unwrap())
                .unwrap()
                .sum_all()
                .unwrap();
            assert_eq!(opt.step(&loss.backward().unwrap()).unwrap(), 2);
        }
        assert_eq!((opt.steps_of(0, 0), opt.steps_of(0, 1), opt.steps_of(0, 2)), (3, 0, 3));
        assert_eq!(values(&b), [1.0]);
        assert_eq!(values(&z), [1.0], "zero gradient, zero moment: no move");
        assert!((values(&a)[0] - 0.7).abs() < 1e-6);
    }
}
