//! How the served reward is derived from the model's raw score: an explicit choice, never a
//! hidden one (PROTOCOL.md §7 and §10 item 9: the authors divided every score by 10).

use std::fmt;
use std::str::FromStr;

/// The transformation applied to each raw score before it is returned.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub enum Normalize {
    /// The reward model's raw score (a sequence classifier's logit), unchanged. The default.
    #[default]
    None,
    /// `1 / (1 + e^-score)`: the logit as a probability in (0, 1).
    Sigmoid,
    /// `score · scale + shift`.
    Affine {
        /// Multiplier (finite, not 0).
        scale: f64,
        /// Offset (finite).
        shift: f64,
    },
}

impl Normalize {
    /// The served reward for raw score `raw`. Non-finite input stays non-finite (the server
    /// refuses to answer with it).
    pub fn apply(self, raw: f32) -> f64 {
        let x = f64::from(raw);
        match self {
            Normalize::None => x,
            Normalize::Sigmoid => 1.0 / (1.0 + (-x).exp()),
            Normalize::Affine { scale, shift } => x * scale + shift,
        }
    }
}

impl fmt::Display for Normalize {
    /// The flag form: `none`, `sigmoid`, `affine:SCALE,SHIFT`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Normalize::None => f.write_str("none"),
            Normalize::Sigmoid => f.write_str("sigmoid"),
            Normalize::Affine { scale, shift } => write!(f, "affine:{scale},{shift}"),
        }
    }
}

impl FromStr for Normalize {
    type Err = String;

    /// Parses `none`, `sigmoid` or `affine:SCALE,SHIFT` (e.g. `affine:0.1,0`).
    ///
    /// # Errors
    /// A message naming the accepted forms; a scale of 0 is refused (every reward would be the
    /// same constant, a default reward in disguise).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim() {
            "none" => Ok(Normalize::None),
            "sigmoid" => Ok(Normalize::Sigmoid),
            other => {
                let Some(args) = other.strip_prefix("affine:") else {
                    return Err(format!("unknown normalization `{other}`; use `none` (raw score), `sigmoid` or `affine:SCALE,SHIFT`"));
                };
                let parts: Vec<&str> = args.split(',').map(str::trim).collect();
                let [scale, shift] = parts.as_slice() else {
                    return Err(format!("`{other}`: affine takes two numbers, `affine:SCALE,SHIFT` (e.g. `affine:0.1,0`)"));
                };
                let num = |t: &str, name: &str| {
                    t.parse::<f64>()
                        .ok()
                        .filter(|v| v.is_finite())
                        .ok_or_else(|| format!("`{other}`: {name} `{t}` is not a finite number"))
                };
                let (scale, shift) = (num(scale, "SCALE")?, num(shift, "SHIFT")?);
                if scale == 0.0 {
                    return Err(format!(
                        "`{other}`: SCALE 0 would give every answer the same reward"
                    ));
                }
                Ok(Normalize::Affine { scale, shift })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_prints_each_form() {
        for (text, want) in [
            ("none", Normalize::None),
            ("sigmoid", Normalize::Sigmoid),
            ("affine:0.1,-2", Normalize::Affine { scale: 0.1, shift: -2.0 }),
        ] {
            let got: Normalize = text.parse().unwrap();
            assert_eq!(got, want);
            assert_eq!(got.to_string().parse::<Normalize>().unwrap(), want);
        }
    }

    #[test]
    fn refuses_bad_forms() {
        for bad in [
            "",
            "tanh",
            "affine:",
            "affine:1",
            "affine:1,2,3",
            "affine:x,1",
            "affine:0,1",
            "affine:inf,0",
        ] {
            assert!(bad.parse::<Normalize>().is_err(), "{bad}");
        }
    }

    #[test]
    fn values_by_hand() {
        assert_eq!(Normalize::None.apply(2.5), 2.5);
        assert_eq!(Normalize::Sigmoid.apply(0.0), 0.5);
        assert!((Normalize::Sigmoid.apply(2.0) - 0.880_797_077_977_882_3).abs() < 1e-12);
        assert_eq!(Normalize::Affine { scale: 0.5, shift: 1.0 }.apply(4.0), 3.0);
        assert!(Normalize::Sigmoid.apply(f32::NAN).is_nan());
    }
}
