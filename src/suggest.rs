//! "Did you mean" for a name the user mistyped: a step, a lab key, an engine, a flag.
//!
//! Owns the one rule for which known names are near a typed one (edit similarity, or one
//! being the start of the other), the clause that offers them, and how a message lists names
//! (`a, b or c`). Must not: know any list of
//! names (callers pass theirs) or decide that a name is wrong (callers did).

/// How similar (Jaro-Winkler, 0..=1) a known name must be to count as near.
const NEAR: f64 = 0.8;
/// At most this many suggestions.
const MOST: usize = 3;

/// The known names near `typed`, nearest first, at most three; none when `typed` is one of them.
pub fn near<'a>(typed: &str, known: impl IntoIterator<Item = &'a str>) -> Vec<&'a str> {
    let typed_l = typed.to_ascii_lowercase();
    let mut scored: Vec<(f64, &str)> = known
        .into_iter()
        .filter_map(|k| {
            let k_l = k.to_ascii_lowercase();
            let prefix =
                !typed_l.is_empty() && (k_l.starts_with(&typed_l) || typed_l.starts_with(&k_l));
            let score = strsim::jaro_winkler(&typed_l, &k_l).max(if prefix { NEAR } else { 0.0 });
            (score >= NEAR && k != typed).then_some((score, k))
        })
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(b.1)));
    scored.dedup_by(|a, b| a.1 == b.1);
    scored.into_iter().take(MOST).map(|(_, k)| k).collect()
}

/// `; did you mean `a`?` (or `` `a` or `b` ``) for the names near `typed`, or nothing.
pub fn did_you_mean<'a>(typed: &str, known: impl IntoIterator<Item = &'a str>) -> String {
    offer(&near(typed, known))
}

/// `; did you mean `a`?` (or `` `a`, `b` or `c` ``) for names already chosen, or nothing.
pub fn offer<S: AsRef<str>>(names: &[S]) -> String {
    let names: Vec<String> = names.iter().map(|n| format!("`{}`", n.as_ref())).collect();
    match names.is_empty() {
        true => String::new(),
        false => format!("; did you mean {}?", join(&names, "or")),
    }
}

/// `a`, `a or b`, `a, b or c` (with `word` between the last two), for a message's list.
pub fn join<S: AsRef<str>>(names: &[S], word: &str) -> String {
    let names: Vec<&str> = names.iter().map(AsRef::as_ref).collect();
    match names.split_last() {
        None => String::new(),
        Some((last, [])) => last.to_string(),
        Some((last, rest)) => format!("{} {word} {last}", rest.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn near_names_are_offered_nearest_first_and_far_ones_never() {
        let steps = [
            "hot-points",
            "point-query",
            "points-covered-pk",
            "update-index",
        ];
        assert_eq!(near("hot-point", steps), ["hot-points"]);
        assert_eq!(
            did_you_mean("hot-point", steps),
            "; did you mean `hot-points`?"
        );
        assert_eq!(
            did_you_mean("engin", ["engine", "name", "bin"]),
            "; did you mean `engine`?"
        );
        assert_eq!(did_you_mean("zzz", steps), "");
        assert_eq!(
            did_you_mean("hot-points", steps),
            "",
            "a known name is no typo"
        );
        let two = did_you_mean("point", steps);
        assert!(
            two.contains("`point-query`") && two.contains(" or "),
            "{two}"
        );
    }

    #[test]
    fn lists_join_their_last_two_with_the_word() {
        assert_eq!(join(&["a", "b", "c"], "and"), "a, b and c");
        assert_eq!(join(&["a", "b"], "or"), "a or b");
        assert_eq!(join(&["a"], "or"), "a");
        assert_eq!(join::<&str>(&[], "or"), "");
    }
}
