//! GGUF metadata helpers.

/// Name of a llama.cpp `general.file_type` value (`llama_ftype`), e.g. 3 → `Q4_1`; `None`
/// for numbers this version does not know.
pub fn ftype_name(ftype: u32) -> Option<&'static str> {
    Some(match ftype {
        0 => "F32",
        1 => "F16",
        2 => "Q4_0",
        3 => "Q4_1",
        7 => "Q8_0",
        8 => "Q5_0",
        9 => "Q5_1",
        10 => "Q2_K",
        11 => "Q3_K_S",
        12 => "Q3_K_M",
        13 => "Q3_K_L",
        14 => "Q4_K_S",
        15 => "Q4_K_M",
        16 => "Q5_K_S",
        17 => "Q5_K_M",
        18 => "Q6_K",
        19 => "IQ2_XXS",
        20 => "IQ2_XS",
        21 => "Q2_K_S",
        22 => "IQ3_XS",
        23 => "IQ3_XXS",
        24 => "IQ1_S",
        25 => "IQ4_NL",
        26 => "IQ3_S",
        27 => "IQ3_M",
        28 => "IQ2_S",
        29 => "IQ2_M",
        30 => "IQ4_XS",
        31 => "IQ1_M",
        32 => "BF16",
        36 => "TQ1_0",
        37 => "TQ2_0",
        38 => "MXFP4_MOE",
        39 => "NVFP4",
        40 => "Q1_0",
        41 => "Q2_0",
        _ => return None,
    })
}

/// Manifest dtype for a raw `general.file_type` metadata string: the ftype name, the raw
/// value when unknown, or `unknown` when absent.
pub(crate) fn dtype_from_meta(raw: Option<&str>) -> String {
    match raw {
        None => "unknown".into(),
        Some(s) => match s.trim().parse::<u32>().ok().and_then(ftype_name) {
            Some(name) => name.into(),
            None => format!("file_type={}", s.trim()),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dtype_names() {
        assert_eq!(dtype_from_meta(Some("3")), "Q4_1");
        assert_eq!(dtype_from_meta(Some("15")), "Q4_K_M");
        assert_eq!(dtype_from_meta(Some("99")), "file_type=99");
        assert_eq!(dtype_from_meta(None), "unknown");
    }
}
