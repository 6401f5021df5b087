//! "Did you mean": the known name closest to a mistyped one.

/// The candidate closest to `input` when it is close enough to be a likely typo (at most two
/// edits, or a third of the candidate's length for long names); `None` for an exact match or
/// nothing near.
pub fn closest<'a>(input: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<String> {
    candidates
        .into_iter()
        .map(|candidate| (strsim::damerau_levenshtein(input, candidate), candidate))
        .filter(|(distance, candidate)| *distance > 0 && *distance <= 2.max(candidate.len() / 3))
        .min_by_key(|(distance, _)| *distance)
        .map(|(_, candidate)| candidate.to_string())
}

/// `"; did you mean 'x'?"`, or nothing: the tail of a message that names an unknown thing.
pub fn did_you_mean(suggestion: Option<&str>) -> String {
    match suggestion {
        Some(name) => format!("; did you mean '{name}'?"),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suggests_only_near_misses() {
        let known = ["compressor", "window", "lcm"];
        assert_eq!(closest("windwo", known).as_deref(), Some("window"));
        assert_eq!(closest("compresor", known).as_deref(), Some("compressor"));
        assert_eq!(closest("lmc", known).as_deref(), Some("lcm"));
        assert_eq!(closest("window", known), None);
        assert_eq!(closest("postgres", known), None);
    }
}
