//! The dotted field of a TOML syntax error. The `toml` crate reports where the text could not be
//! read (a byte span, shown as a line) but not which key it was reading: an integer beyond 64
//! bits or a float that overflows names only a line. [`field_at`] reads the table headers and
//! keys up to that line to name the field as the schema errors do (`solver.steps`,
//! `boundary.1.y`), and [`message`] rewords the crate's message for an integer out of range.

/// The dotted path of the key whose value holds byte `offset` of `text`: the table header
/// above it (an array of tables counted, `[[boundary]]` -> `boundary.1`) and the key of the
/// line, or of the last line that starts a key where the value spans lines. `None` where no
/// key is found.
pub(super) fn field_at(text: &str, offset: usize) -> Option<String> {
    let target = text[..offset.min(text.len())].matches('\n').count();
    let mut table = String::new();
    let mut counts: Vec<(String, usize)> = Vec::new();
    // the key whose value is being read, and how many brackets its value has left open
    let (mut field, mut open) = (None, 0i64);
    for line in text.lines().take(target + 1) {
        let t = line.trim_start();
        if open > 0 {
            open += balance(t);
            continue;
        }
        field = None;
        if let Some(rest) = t.strip_prefix("[[") {
            let name = normalize(&rest[..rest.find("]]")?]);
            let index = match counts.iter_mut().find(|(n, _)| *n == name) {
                Some((_, count)) => {
                    *count += 1;
                    *count
                }
                None => {
                    counts.push((name.clone(), 0));
                    0
                }
            };
            table = format!("{name}.{index}");
        } else if let Some(rest) = t.strip_prefix('[') {
            table = normalize(&rest[..rest.find(']')?]);
        } else if let Some((key, value)) = key_of(t) {
            open = balance(value);
            field = Some(match table.is_empty() {
                true => key,
                false => format!("{table}.{key}"),
            });
        }
    }
    field
}

/// Brackets a piece of a value opens less those it closes (strings and comments are not
/// told apart: a guess that holds for the numbers and arrays of a model).
fn balance(value: &str) -> i64 {
    let value = value.split('#').next().unwrap_or("");
    value
        .chars()
        .map(|c| match c {
            '[' | '{' => 1,
            ']' | '}' => -1,
            _ => 0,
        })
        .sum()
}

/// The key a line assigns and the rest of the line (`steps = 40` -> `steps`, `a . "b" = 1`
/// -> `a.b`), if it starts with one.
fn key_of(line: &str) -> Option<(String, &str)> {
    let (key, value) = line.split_once('=')?;
    let bare = |c: char| c.is_ascii_alphanumeric() || "_-.\"' \t".contains(c);
    (!key.trim().is_empty() && key.chars().all(bare)).then(|| (normalize(key), value))
}

/// A dotted key without quotes and blanks.
fn normalize(key: &str) -> String {
    key.split('.')
        .map(|part| part.trim().trim_matches(['"', '\'']))
        .collect::<Vec<_>>()
        .join(".")
}

/// The crate's message, reworded where it is obscure: an integer beyond 64 bits is read as an
/// `i128` and refused as "invalid type".
pub(super) fn message(message: &str) -> String {
    let big = message
        .strip_prefix("invalid type: integer `")
        .and_then(|rest| rest.split_once("` as i128"));
    match big {
        Some((value, _)) => format!(
            "integer {value} is out of range: TOML integers are 64-bit ({} to {})",
            i64::MIN,
            i64::MAX
        ),
        None => message.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_the_key_of_a_line_under_its_table() {
        let text = "name = \"a\"\n[solver]\nsteps = 1\n[[boundary]]\ny = 1\n[[boundary]]\n\
                    # note\ny = [\n  1,\n  2]\n";
        let at = |needle: &str| field_at(text, text.find(needle).unwrap());
        assert_eq!(at("\"a\"").as_deref(), Some("name"));
        assert_eq!(at("1\n[[").as_deref(), Some("solver.steps"));
        assert_eq!(at("y = 1").as_deref(), Some("boundary.0.y"));
        assert_eq!(at("2]").as_deref(), Some("boundary.1.y"));
        // a line that assigns nothing is not the previous line's field
        let bad = "[solver]\nsteps = 1\nkind explicit\n";
        assert_eq!(field_at(bad, bad.find("kind").unwrap()), None);
    }
}
