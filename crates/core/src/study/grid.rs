//! A grid of config values: `KEY=V1,V2,...` axes (`--grid` of `sweep` and
//! `advise`), every combination of their values, and a combination's
//! settings as text.

use std::collections::BTreeMap;

use crate::error::InputError;

/// One grid key and its values, as TOML text.
#[derive(Debug, Clone, PartialEq)]
pub struct Axis {
    pub key: String,
    pub values: Vec<String>,
}

/// The most variants (the product of the grid's axes) a sweep runs.
pub const MAX_GRID_VARIANTS: usize = 10_000;

/// Split `text` at the commas outside brackets and quotes.
fn split_values(text: &str) -> Result<Vec<String>, &'static str> {
    let (mut parts, mut current) = (Vec::new(), String::new());
    let (mut depth, mut quote) = (0i32, None::<char>);
    for c in text.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '"' | '\'') => quote = Some(c),
            (None, '[' | '{') => depth += 1,
            (None, ']' | '}') => {
                depth -= 1;
                if depth < 0 {
                    return Err("closes a bracket it did not open");
                }
            }
            (None, ',') if depth == 0 => {
                parts.push(current.trim().to_string());
                current.clear();
                continue;
            }
            _ => {}
        }
        current.push(c);
    }
    if quote.is_some() {
        return Err("has an unclosed quote");
    }
    if depth > 0 {
        return Err("has an unclosed `[` or `{`");
    }
    parts.push(current.trim().to_string());
    Ok(parts)
}

/// `KEY=V1,V2,...` → an axis; errors name `--grid`.
pub fn parse_axis(text: &str) -> Result<Axis, InputError> {
    let (key, values) = text.split_once('=').ok_or_else(|| {
        InputError::value(
            "--grid",
            text,
            "is not KEY=V1,V2,... (e.g. scheme.load=2,3,4)",
        )
    })?;
    let key = key.trim();
    if key.is_empty() {
        return Err(InputError::value("--grid", text, "has no key before `=`"));
    }
    let values = split_values(values).map_err(|rule| InputError::value("--grid", text, rule))?;
    if values.iter().any(String::is_empty) {
        return Err(InputError::value("--grid", text, "has an empty value"));
    }
    Ok(Axis {
        key: key.to_string(),
        values,
    })
}

/// Every `--grid` axis, each key at most once, at most
/// [`MAX_GRID_VARIANTS`] combinations.
pub fn parse_grid(grid: &[String]) -> Result<Vec<Axis>, InputError> {
    let axes = grid
        .iter()
        .map(|g| parse_axis(g))
        .collect::<Result<Vec<_>, _>>()?;
    for (i, a) in axes.iter().enumerate() {
        if axes[..i].iter().any(|b| b.key == a.key) {
            return Err(InputError::value("--grid", &a.key, "is given twice"));
        }
    }
    let variants = axes
        .iter()
        .try_fold(1usize, |n, a| n.checked_mul(a.values.len()))
        .unwrap_or(usize::MAX);
    if variants > MAX_GRID_VARIANTS {
        let sizes: Vec<String> = axes.iter().map(|a| a.values.len().to_string()).collect();
        return Err(InputError::new(
            "--grid",
            format!(
                "{} = {variants} variants, more than the {MAX_GRID_VARIANTS} a sweep runs (each is a whole simulation)",
                sizes.join(" x ")
            ),
        ));
    }
    Ok(axes)
}

/// Every combination of the axes' values, in order (the last axis fastest).
pub fn combinations(axes: &[Axis]) -> Vec<Vec<(String, String)>> {
    let mut all = vec![Vec::new()];
    for axis in axes {
        all = all
            .into_iter()
            .flat_map(|prefix: Vec<(String, String)>| {
                axis.values.iter().map(move |v| {
                    let mut next = prefix.clone();
                    next.push((axis.key.clone(), v.clone()));
                    next
                })
            })
            .collect();
    }
    all
}

/// Settings as `key=value key=value` (keys in order).
pub fn describe(settings: &BTreeMap<String, String>) -> String {
    settings
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// `scheme settings`, trimmed (no trailing space without settings).
pub fn label(scheme: &str, settings: &BTreeMap<String, String>) -> String {
    format!("{scheme} {}", describe(settings))
        .trim()
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_split_outside_brackets_and_quotes() {
        assert_eq!(split_values("2, 3,4").unwrap(), ["2", "3", "4"]);
        assert_eq!(
            split_values("[1, 2],[3], \"a,b\"").unwrap(),
            ["[1, 2]", "[3]", "\"a,b\""]
        );
        assert_eq!(
            split_values("[1,2").unwrap_err(),
            "has an unclosed `[` or `{`"
        );
        assert_eq!(
            split_values("1]").unwrap_err(),
            "closes a bracket it did not open"
        );
        assert_eq!(split_values("\"a,b").unwrap_err(), "has an unclosed quote");
    }

    #[test]
    fn a_grid_needs_a_key_and_values() {
        assert_eq!(
            parse_axis("scheme.load=2,3").unwrap(),
            Axis {
                key: "scheme.load".into(),
                values: vec!["2".into(), "3".into()]
            }
        );
        for bad in ["scheme.load", "=2,3", "scheme.load=2,,3"] {
            assert_eq!(parse_axis(bad).unwrap_err().field, "--grid", "{bad}");
        }
    }

    #[test]
    fn a_grid_refuses_a_key_twice_and_too_many_variants() {
        let twice = parse_grid(&["a=1".into(), "a=2".into()]).unwrap_err();
        assert!(twice.to_string().contains("is given twice"), "{twice}");
        let values = (0..101)
            .map(|i| i.to_string())
            .collect::<Vec<_>>()
            .join(",");
        let big = parse_grid(&[format!("a={values}"), format!("b={values}")]).unwrap_err();
        assert!(
            big.to_string().contains("101 x 101 = 10201 variants"),
            "{big}"
        );
        assert_eq!(
            parse_grid(&[format!("a={values}")]).unwrap()[0]
                .values
                .len(),
            101
        );
    }

    #[test]
    fn combinations_cover_the_product_in_order() {
        let axes = [parse_axis("a=1,2").unwrap(), parse_axis("b=x,y,z").unwrap()];
        let all = combinations(&axes);
        assert_eq!(all.len(), 6);
        assert_eq!(all[1], [("a".into(), "1".into()), ("b".into(), "y".into())]);
        assert_eq!(combinations(&[]), [Vec::<(String, String)>::new()]);
    }

    #[test]
    fn settings_read_as_key_value_pairs() {
        let settings: BTreeMap<String, String> = combinations(&[
            parse_axis("scheme.load=2").unwrap(),
            parse_axis("scheme.clusters=4").unwrap(),
        ])[0]
            .iter()
            .cloned()
            .collect();
        assert_eq!(describe(&settings), "scheme.clusters=4 scheme.load=2");
        assert_eq!(
            label("gc-sc", &settings),
            "gc-sc scheme.clusters=4 scheme.load=2"
        );
        assert_eq!(label("uncoded", &BTreeMap::new()), "uncoded");
    }
}
