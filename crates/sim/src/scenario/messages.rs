//! serde's messages in plain words. serde names Rust types in its messages
//! (`invalid type: integer `3`, expected struct RawRun`, `expected u64`,
//! `data did not match any variant of untagged enum RawJoin`); a scenario's
//! author wrote TOML or a Python dict and should read what to write instead
//! ("expected a table", "expected a whole number >= 0").

/// Rewrites one serde message (its first line) about `field` (a dotted path)
/// so it names no Rust type.
pub(super) fn plain(message: &str, field: &str) -> String {
    // A non-string where a name (an enum) belongs: toml says "invalid type:
    // unit variant, expected string only", serde_json "invalid type: integer
    // `1`, expected string or map". Neither names the enum; the field does.
    let name = field.rsplit('.').next().unwrap_or(field);
    let names = || format!("a string, one of {}", variants(enum_of_field(name)));
    if message.ends_with(", expected string only") {
        return format!("expected {}", names());
    }
    if let Some(head) = message.strip_suffix(", expected string or map") {
        let head = head
            .strip_prefix("invalid type: ")
            .map_or(head.to_string(), |w| format!("invalid type: {}", unexpected(w)));
        return format!("{head}, expected {}", names());
    }
    if let Some(name) = message.strip_prefix("data did not match any variant of untagged enum ") {
        return format!("expected {}", untagged(name.trim()));
    }
    for head in ["invalid type: ", "invalid value: ", "invalid length "] {
        let Some(rest) = message.strip_prefix(head) else { continue };
        // The unexpected part may quote the value, which may itself contain
        // ", expected "; serde's expectation comes last.
        let Some(at) = rest.rfind(", expected ") else { break };
        let (what, expected) = (&rest[..at], &rest[at + ", expected ".len()..]);
        let what = if head == "invalid length " { what.to_string() } else { unexpected(what) };
        return format!("{head}{what}, expected {}", expected_form(expected));
    }
    message.to_string()
}

/// serde's name for a kind of value found, in TOML's words.
fn unexpected(what: &str) -> String {
    for (serde, plain) in [
        ("map", "table"),
        ("sequence", "list"),
        ("floating point", "number"),
        ("unit value", "empty value"),
        ("newtype struct", "value"),
        ("Option value", "value"),
    ] {
        if let Some(rest) = what.strip_prefix(serde) {
            if rest.is_empty() || rest.starts_with(' ') {
                return format!("{plain}{rest}");
            }
        }
    }
    what.to_string()
}

/// What serde expected, in plain words.
fn expected_form(expected: &str) -> String {
    let e = expected.trim();
    let plain = match e {
        "u8" | "u16" | "u64" | "u128" | "usize" => "a whole number >= 0",
        "u32" => "a whole number from 0 to 4294967295",
        "i8" | "i16" | "i32" | "i64" | "i128" | "isize" => "a whole number",
        "f32" | "f64" => "a number",
        "a boolean" | "bool" => "true or false",
        "a sequence" => "a list",
        "a map" => "a table",
        "a string" | "a borrowed string" | "string" => "a string in quotes",
        "char" | "a character" => "a single character",
        "unit" => "nothing",
        _ => "",
    };
    if !plain.is_empty() {
        return plain.to_string();
    }
    if e.starts_with("struct ") || e.starts_with("tuple struct ") {
        return "a table".to_string();
    }
    if let Some(name) = e.strip_prefix("enum ") {
        return format!("a string, one of {}", variants(name.trim()));
    }
    if let Some(n) = e.strip_prefix("an array of length ").or_else(|| e.strip_prefix("a tuple of size ")) {
        return format!("a list of {n} values");
    }
    e.to_string()
}

/// The names an enum of the scenario file accepts.
fn variants(name: &str) -> &'static str {
    match name {
        "CcName" => "\"newreno\", \"cubic\", \"vegas\", \"lp\", \"nice\", \"ledbat\"",
        "TransportName" => "\"tcp\", \"utp\"",
        "Preset" => "\"rfc\", \"linux\", \"linux-2.6.32\", \"linux-6\"",
        "Topology" => "\"dumbbell\"",
        "ClockOffsetsName" => "\"random\", \"zero\"",
        "UtpVariantName" => "\"bep29\", \"rfc6817\", \"draft\"",
        "Role" => "\"seed\", \"leecher\"",
        _ => "the names listed in docs/scenarios.md",
    }
}

/// The enum a field of this name holds (see `raw.rs`, `utp.rs`, `swarm.rs`).
fn enum_of_field(name: &str) -> &'static str {
    match name {
        "cc" => "CcName",
        "transport" => "TransportName",
        "preset" => "Preset",
        "topology" => "Topology",
        "clock_offsets" => "ClockOffsetsName",
        "variant" => "UtpVariantName",
        "role" => "Role",
        _ => "",
    }
}

/// What an untagged enum of the scenario file accepts.
fn untagged(name: &str) -> &'static str {
    match name {
        "RawJoin" => {
            "a time such as \"30 s\", a list of times such as [\"0 s\", \"5 s\"], \
             or a table such as { poisson = \"10 s\", start = \"0 s\" }"
        }
        "RawPipeline" => "\"mainline\" or a whole number from 1 to 1000",
        "RawPeerRef" => "a peer index such as 0 or a class label such as \"seed\"",
        _ => "one of the forms listed in docs/scenarios.md",
    }
}

#[cfg(test)]
mod tests {
    use super::plain as plain_at;

    fn plain(m: &str) -> String {
        plain_at(m, "x")
    }

    #[test]
    fn an_unsigned_integer_type_reads_as_a_whole_number() {
        assert_eq!(
            plain("invalid type: string \"x\", expected u64"),
            "invalid type: string \"x\", expected a whole number >= 0"
        );
        assert_eq!(
            plain("invalid value: integer `-1`, expected u32"),
            "invalid value: integer `-1`, expected a whole number from 0 to 4294967295"
        );
        assert_eq!(plain("invalid type: map, expected usize"), "invalid type: table, expected a whole number >= 0");
    }

    #[test]
    fn a_signed_integer_type_reads_as_a_whole_number() {
        assert_eq!(
            plain("invalid type: boolean `true`, expected i64"),
            "invalid type: boolean `true`, expected a whole number"
        );
    }

    #[test]
    fn a_float_type_reads_as_a_number() {
        assert_eq!(
            plain("invalid type: string \"0.1\", expected f64"),
            "invalid type: string \"0.1\", expected a number"
        );
        assert_eq!(
            plain("invalid type: floating point `1.5`, expected u32"),
            "invalid type: number `1.5`, expected a whole number from 0 to 4294967295"
        );
    }

    #[test]
    fn a_struct_reads_as_a_table() {
        assert_eq!(
            plain("invalid type: integer `3`, expected struct RawRun"),
            "invalid type: integer `3`, expected a table"
        );
    }

    #[test]
    fn an_enum_reads_as_a_string_with_its_choices() {
        let m = plain("invalid type: integer `3`, expected enum CcName");
        assert_eq!(m, "invalid type: integer `3`, expected a string, one of \"newreno\", \"cubic\", \"vegas\", \"lp\", \"nice\", \"ledbat\"");
    }

    #[test]
    fn a_number_where_toml_wants_a_name_lists_the_names_of_the_field() {
        let m = plain_at("invalid type: unit variant, expected string only", "flows[0].transport");
        assert_eq!(m, "expected a string, one of \"tcp\", \"utp\"");
        let m = plain_at("invalid type: floating point `1.5`, expected string or map", "peers[2].role");
        assert_eq!(m, "invalid type: number `1.5`, expected a string, one of \"seed\", \"leecher\"");
    }

    #[test]
    fn an_untagged_enum_reads_as_the_forms_it_accepts() {
        let m = plain("data did not match any variant of untagged enum RawJoin");
        assert!(m.starts_with("expected a time such as \"30 s\", a list of times") && m.contains("poisson"), "{m}");
        let m = plain("data did not match any variant of untagged enum RawPipeline");
        assert_eq!(m, "expected \"mainline\" or a whole number from 1 to 1000");
    }

    #[test]
    fn sequences_maps_and_booleans_read_as_lists_tables_and_true_or_false() {
        assert_eq!(plain("invalid type: sequence, expected a boolean"), "invalid type: list, expected true or false");
        assert_eq!(plain("invalid type: string \"a\", expected a map"), "invalid type: string \"a\", expected a table");
        assert_eq!(plain("invalid type: map, expected a sequence"), "invalid type: table, expected a list");
        assert_eq!(
            plain("invalid length 3, expected an array of length 2"),
            "invalid length 3, expected a list of 2 values"
        );
    }

    #[test]
    fn a_value_that_quotes_the_word_expected_keeps_its_text() {
        let m = plain("invalid type: string \"a, expected u64\", expected f64");
        assert_eq!(m, "invalid type: string \"a, expected u64\", expected a number");
    }

    #[test]
    fn messages_of_our_own_and_serde_field_messages_pass_unchanged() {
        for m in [
            "'25' has no duration unit; use ns, us, ms, s, min, h (e.g. \"25 ms\")",
            "unknown field `bufer`, expected `capacity` or `buffer`",
            "missing field `network`",
            "invalid type: integer `30`, expected a duration string with a unit, e.g. \"25 ms\"",
        ] {
            assert_eq!(plain(m), m);
        }
    }
}
