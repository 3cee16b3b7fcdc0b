//! Reading ratings CSVs: columns in any order, grouping by dimension, and errors that name the
//! file, the line (as an editor numbers it) and the field.

use prbench_stats::agreement::{Ratings, RatingsError};

const FILE: &str = "ratings.csv";

fn read(text: &str) -> Result<Ratings, RatingsError> {
    Ratings::from_csv_reader(FILE, text.as_bytes())
}

fn err(text: &str) -> (RatingsError, String) {
    let e = read(text).expect_err("must be rejected");
    let msg = e.to_string();
    (e, msg)
}

fn assert_names(msg: &str, parts: &[&str]) {
    for p in parts {
        assert!(msg.contains(p), "`{p}` missing from: {msg}");
    }
}

#[test]
fn columns_in_any_order_with_extra_columns() {
    let text = "\u{feff}score, unit ,note,annotator,dimension,batch\n\
                4,q1,ok,ann,fit,1\n\
                5, q1 ,,bob,fit,1\n\
                2,q2,,ann,fit,2\n\
                3,q1,,ann,style,2\n";
    let r = read(text).unwrap();
    assert_eq!(r.source(), FILE);
    assert_eq!(r.ignored_columns(), ["note", "batch"]);
    let dims: Vec<&str> = r.dimensions().keys().map(String::as_str).collect();
    assert_eq!(dims, ["fit", "style"]);
    let fit = &r.dimensions()["fit"];
    assert_eq!((fit.n_ratings(), fit.n_annotators()), (3, 2));
    assert_eq!((fit.data().n_pairable_units(), fit.data().n_single_units()), (1, 1));
    let q1 = &fit.data().units()[0];
    assert_eq!(q1.id(), "q1");
    let values: Vec<(&str, f64)> =
        q1.ratings().iter().map(|x| (x.annotator.as_str(), x.value)).collect();
    assert_eq!(values, [("ann", 4.0), ("bob", 5.0)]);
    assert_eq!(r.dimensions()["style"].n_annotators(), 1);
}

/// Dimensions come out sorted, not in the order first seen, and units likewise.
#[test]
fn order_of_rows_does_not_matter() {
    let a =
        read("annotator,unit,dimension,score\nx,u2,zeta,1\ny,u1,alpha,2\nx,u1,alpha,3\n").unwrap();
    let b =
        read("annotator,unit,dimension,score\nx,u1,alpha,3\ny,u1,alpha,2\nx,u2,zeta,1\n").unwrap();
    assert_eq!(a.dimensions(), b.dimensions());
    assert_eq!(a.dimensions().keys().next().unwrap(), "alpha");
}

#[test]
fn from_path_reads_the_file_and_names_it_in_errors() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("export.csv");
    std::fs::write(&path, "annotator,unit,dimension,score\na,u,d,1\nb,u,d,x\n").unwrap();
    let e = Ratings::from_csv_path(&path).unwrap_err().to_string();
    assert_names(&e, &[&format!("`{}` line 3", path.display()), "field `score`", "`x`"]);
    let missing = dir.path().join("nope.csv");
    let e = Ratings::from_csv_path(&missing).unwrap_err();
    assert!(matches!(e, RatingsError::Io { .. }), "{e:?}");
    assert_names(&e.to_string(), &[&format!("`{}`", missing.display())]);
}

#[test]
fn missing_and_repeated_columns() {
    let (e, msg) = err("annotator,unit,score,comment\na,u,3,x\n");
    assert!(matches!(e, RatingsError::MissingColumn { column: "dimension", line: 1, .. }), "{e:?}");
    assert_names(
        &msg,
        &[
            "`ratings.csv` line 1",
            "no `dimension` column",
            "`annotator`, `unit`, `score`, `comment`",
        ],
    );
    let (e, msg) = err("annotator,unit,dimension,score,unit\na,u,d,3,v\n");
    assert!(matches!(e, RatingsError::DuplicateColumn { column: "unit", .. }), "{e:?}");
    assert_names(&msg, &["`ratings.csv` line 1", "`unit` appears twice"]);
}

#[test]
fn empty_file_and_header_only() {
    let (e, msg) = err("");
    assert!(matches!(e, RatingsError::Empty { .. }), "{e:?}");
    assert_names(&msg, &["`ratings.csv` is empty", "annotator, unit, dimension and score"]);
    let (e, msg) = err("annotator,unit,dimension,score\n");
    assert!(matches!(e, RatingsError::NoRatings { .. }), "{e:?}");
    assert_names(&msg, &["`ratings.csv`", "no ratings"]);
}

/// Each required field, empty, is named with its line. Line numbers count every line of the
/// file: the quoted comment on line 2 runs on to line 3 and line 4 is blank (skipped), so the
/// faulty row is on line 5.
#[test]
fn empty_fields_name_line_and_field() {
    for (i, field) in ["annotator", "unit", "dimension", "score"].iter().enumerate() {
        let mut row = ["a", "u", "d", "3"];
        row[i] = " ";
        let text = format!(
            "annotator,unit,dimension,score,comment\nz,u,d,4,\"two\nlines\"\n\n{},\n",
            row.join(",")
        );
        let (e, msg) = err(&text);
        assert!(matches!(e, RatingsError::EmptyField { line: 5, .. }), "{field}: {e:?}");
        assert_names(&msg, &["`ratings.csv` line 5", &format!("field `{field}` is empty")]);
    }
}

#[test]
fn scores_must_be_finite_numbers() {
    for bad in ["abc", "NaN", "inf", "-infinity", "4/5", "3,5"] {
        let text = format!("annotator,unit,dimension,score\na,u,d,4\nb,u,d,\"{bad}\"\n");
        let (e, msg) = err(&text);
        assert!(matches!(e, RatingsError::BadScore { line: 3, .. }), "{bad}: {e:?}");
        assert_names(
            &msg,
            &["`ratings.csv` line 3", "field `score`", &format!("`{bad}` is not a finite number")],
        );
    }
    let ok = read("annotator,unit,dimension,score\na,u,d,-1.5e0\nb,u,d,+2\n").unwrap();
    let values: Vec<f64> =
        ok.dimensions()["d"].data().units()[0].ratings().iter().map(|r| r.value).collect();
    assert_eq!(values, [-1.5, 2.0]);
}

/// The same (annotator, unit, dimension) twice is an error naming both lines, even with the
/// same score; the same annotator and unit on another dimension is fine.
#[test]
fn duplicate_ratings_name_both_lines() {
    let text = "annotator,unit,dimension,score\na,u,fit,4\na,u,style,4\nb,u,fit,2\na,u,fit,4\n";
    let (e, msg) = err(text);
    assert!(matches!(e, RatingsError::DuplicateRating { line: 5, first_line: 2, .. }), "{e:?}");
    assert_names(
        &msg,
        &["`ratings.csv` line 5", "annotator `a`", "unit `u`", "dimension `fit`", "at line 2"],
    );
}

#[test]
fn malformed_rows() {
    let (e, msg) = err("annotator,unit,dimension,score\na,u,d,4\nb,u,d,3,extra\n");
    assert!(matches!(e, RatingsError::FieldCount { line: 3, expected: 4, got: 5, .. }), "{e:?}");
    assert_names(&msg, &["`ratings.csv` line 3", "5 fields, the header has 4"]);
    let mut bytes = b"annotator,unit,dimension,score\na,u,d,4\nb,".to_vec();
    bytes.extend_from_slice(&[0xff, 0xfe]);
    bytes.extend_from_slice(b",d,3\n");
    let e = Ratings::from_csv_reader(FILE, bytes.as_slice()).unwrap_err();
    assert!(matches!(e, RatingsError::NotUtf8 { line: 3, field: 2, .. }), "{e:?}");
    assert_names(&e.to_string(), &["`ratings.csv` line 3", "field 2", "UTF-8"]);
}

/// CRLF line ends and blank lines, before the header and between rows, are counted as an editor
/// counts them.
#[test]
fn line_numbers_with_crlf_and_blank_lines() {
    let (e, _) = err("\r\nannotator,unit,dimension,score\r\na,u,d,4\r\n\r\n\r\nb,u,d,x\r\n");
    assert!(matches!(e, RatingsError::BadScore { line: 6, .. }), "{e:?}");
    let (e, _) = err("\n\nannotator,unit,score\n");
    assert!(matches!(e, RatingsError::MissingColumn { line: 3, .. }), "{e:?}");
    let (e, _) = err("annotator,unit,dimension,score\n\na,u,d,4\n\n\na,u,d,5\n");
    assert!(matches!(e, RatingsError::DuplicateRating { line: 6, first_line: 3, .. }), "{e:?}");
}
