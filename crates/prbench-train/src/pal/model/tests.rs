//! Tests of the PAL network: GELU, the two variants' forward passes and losses, the saved tensors.

use super::*;

fn t(v: &[f64], shape: &[usize]) -> Tensor {
    Tensor::from_vec(v.to_vec(), shape, &Device::Cpu).unwrap()
}

/// Numerical against analytic derivative of GELU, and against candle's own gelu_erf values.
#[test]
fn gelu_is_exact_and_differentiable() {
    let xs = [-3.0, -0.7, 0.0, 0.4, 2.5];
    let x = candle_core::Var::from_tensor(&t(&xs, &[5])).unwrap();
    let y = gelu(x.as_tensor()).unwrap();
    let want = x.as_tensor().gelu_erf().unwrap().to_vec1::<f64>().unwrap();
    for (a, b) in y.to_vec1::<f64>().unwrap().iter().zip(&want) {
        assert!((a - b).abs() < 1e-15);
    }
    let grads = y.sum_all().unwrap().backward().unwrap();
    let g = grads.get(x.as_tensor()).unwrap().to_vec1::<f64>().unwrap();
    let f = |x: f64| 0.5 * x * (1.0 + erf_ref(x / 2f64.sqrt()));
    for (i, &x0) in xs.iter().enumerate() {
        let h = 1e-6;
        let num = (f(x0 + h) - f(x0 - h)) / (2.0 * h);
        assert!((g[i] - num).abs() < 1e-8, "x {x0}: {} vs {num}", g[i]);
    }
}

/// erf by its Maclaurin series (enough terms for |x| ≤ 3).
fn erf_ref(x: f64) -> f64 {
    let mut sum = 0.0;
    let mut term = x;
    for n in 0..200 {
        sum += term / (2 * n + 1) as f64;
        term *= -x * x / (n + 1) as f64;
    }
    sum * 2.0 / std::f64::consts::PI.sqrt()
}

#[test]
fn logit_scale_is_clamped_with_zero_gradient_above() {
    for (s, scale, grad) in [(1.0f64, 1f64.exp(), 1f64.exp()), (5.0, 100.0, 0.0)] {
        let v = candle_core::Var::from_tensor(&t(&[s], &[1])).unwrap();
        let y = v.as_tensor().exp().unwrap().minimum(MAX_LOGIT_SCALE).unwrap();
        assert!((y.to_vec1::<f64>().unwrap()[0] - scale).abs() < 1e-12);
        let g = y.sum_all().unwrap().backward().unwrap();
        assert!((g.get(v.as_tensor()).unwrap().to_vec1::<f64>().unwrap()[0] - grad).abs() < 1e-12);
    }
}

#[test]
fn mixture_rows_sum_to_one_and_losses_by_hand() {
    let m = mixture(&t(&[0.0, 0.0, 1.0, 3.0], &[2, 2])).unwrap().to_vec2::<f64>().unwrap();
    assert_eq!(m[0], [0.5, 0.5]);
    assert!((m[1][1] - 1.0 / (1.0 + (-2f64).exp())).abs() < 1e-15);
    let rc = t(&[2.0, 0.5, -1.0], &[3]);
    let rr = t(&[0.0, 0.0, 0.0], &[3]);
    assert_eq!(pair_loss(Variant::A, &rc, &rr).unwrap().to_vec1::<f64>().unwrap(), [0.0, 0.5, 2.0]);
    let b = pair_loss(Variant::B, &rc, &rr).unwrap().to_vec1::<f64>().unwrap();
    for (l, m) in b.iter().zip([2.0f64, 0.5, -1.0]) {
        assert!((l - (1.0 + (-m).exp()).ln()).abs() < 1e-15);
    }
}

#[test]
fn names_shapes_and_round_trip() {
    assert_eq!(
        PalNet::tensor_names(Variant::A, 2),
        ["P", "f.0.bias", "f.0.weight", "f.1.bias", "f.1.weight", "f.2.bias", "f.2.weight"]
    );
    assert_eq!(PalNet::tensor_names(Variant::B, 2).len(), 6 + 12 + 1);
    for variant in [Variant::A, Variant::B] {
        let init = PalNet::init_tensors(variant, 3, 4, 7).unwrap();
        let again = PalNet::init_tensors(variant, 3, 4, 7).unwrap();
        for (name, t) in &init {
            let flat = |t: &Tensor| t.flatten_all().unwrap().to_vec1::<f32>().unwrap();
            assert_eq!(flat(t), flat(&again[name]), "{name}: same seed, same values");
        }
        let net = PalNet::from_tensors(variant, 3, 4, &init).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let w = Tensor::from_vec(
            init_user_row(7, "u1", 3)
                .into_iter()
                .chain(init_user_row(7, "u2", 3))
                .collect::<Vec<f32>>(),
            (2, 3),
            &Device::Cpu,
        )
        .unwrap();
        save_tensors(&dir.path().join("p.safetensors"), &net, &w).unwrap();
        let (back, w2) = load_tensors(&dir.path().join("p.safetensors"), variant, 3, 4, 2).unwrap();
        assert_eq!(w2.to_vec2::<f32>().unwrap(), w.to_vec2::<f32>().unwrap());
        let x = Tensor::from_vec(
            (0..8).map(|i| i as f32 / 8.0).collect::<Vec<_>>(),
            (2, 4),
            &Device::Cpu,
        )
        .unwrap();
        let r1 = net.rewards(&w, Some(&x), &x).unwrap().to_vec1::<f32>().unwrap();
        let r2 = back.rewards(&w2, Some(&x), &x).unwrap().to_vec1::<f32>().unwrap();
        assert_eq!(r1, r2);
        assert!(load_tensors(&dir.path().join("p.safetensors"), variant, 2, 4, 2).is_err());
        assert!(load_tensors(&dir.path().join("p.safetensors"), variant, 3, 4, 3)
            .unwrap_err()
            .to_string()
            .contains("`W`"));
    }
    // Another seed, other values; the prototypes are unit rows.
    let a = PalNet::init_tensors(Variant::A, 2, 5, 1).unwrap();
    assert_ne!(
        a["f.0.weight"].to_vec2::<f32>().unwrap(),
        PalNet::init_tensors(Variant::A, 2, 5, 2).unwrap()["f.0.weight"].to_vec2::<f32>().unwrap()
    );
    for row in a["P"].to_vec2::<f32>().unwrap() {
        assert!((row.iter().map(|x| x * x).sum::<f32>() - 1.0).abs() < 1e-6);
    }
}

#[test]
fn user_rows_are_standard_normal() {
    let draws: Vec<f32> = (0..4000).flat_map(|i| init_user_row(3, &format!("u{i}"), 2)).collect();
    let n = draws.len() as f64;
    let mean = draws.iter().map(|&x| x as f64).sum::<f64>() / n;
    let var = draws.iter().map(|&x| (x as f64 - mean).powi(2)).sum::<f64>() / n;
    assert!(mean.abs() < 0.05 && (var - 1.0).abs() < 0.06, "mean {mean}, variance {var}");
    assert_eq!(init_user_row(3, "u1", 2), init_user_row(3, "u1", 2));
    assert_ne!(init_user_row(3, "u1", 2), init_user_row(4, "u1", 2));
}
