//! Unit tests of the LinkBench suite's pure parts: steps, loader ranges, the out-degree
//! distribution, the mix and the id draws.

use super::*;
use rand::SeedableRng;

fn settings() -> Settings {
    Settings {
        loaders: 3,
        request: Duration::from_secs(2),
        warmup: Duration::from_secs(1),
        ..Settings::with_defaults(10_000, vec![1, 4])
    }
}

#[test]
fn steps_in_order_with_a_request_step_per_requester_count() {
    let labels: Vec<String> = settings().steps().into_iter().map(|(l, _)| l).collect();
    assert_eq!(
        labels,
        [
            "linkbench.load",
            "linkbench.index",
            "linkbench.warm",
            "linkbench.request.P1",
            "linkbench.request.P4",
            "linkbench.check"
        ]
    );
    let s = settings();
    let plan = s.step_plan(4, "linkbench.request.P4", s.steps()[4].1);
    assert_eq!(plan.clients, Some(4));
    assert_eq!(plan.roles[0].ops, OPS);
    assert_eq!(plan.measure, Some(Duration::from_secs(2)));
    let load = s.step_plan(0, "linkbench.load", Kind::Load);
    assert_eq!(load.clients, Some(3));
    assert_eq!(load.measure, None, "the load ends on its quotas");
    assert!(
        s.step_plan(1, "linkbench.index", Kind::Index)
            .postwrite_after
    );
}

#[test]
fn loader_ranges_cover_every_id_once() {
    for (n, loaders) in [(10_000u64, 3u32), (7, 4), (1, 1)] {
        let mut next = 1;
        for l in 0..loaders {
            let (first, last) = loader_range(n, loaders, l);
            assert_eq!(first, next);
            next = last + 1;
        }
        assert_eq!(next, n + 1);
    }
    let s = settings();
    let total: u64 = s.load_statements().iter().sum();
    let (nodes, links, counts) = range_rows(1, s.maxid1);
    assert!(total >= (nodes + links + counts).div_ceil(1024));
    let most = s.load_statements().into_iter().max().expect("a loader");
    assert!(
        s.load_statement_bound() >= most,
        "{} < {most}",
        s.load_statement_bound()
    );
}

/// A plan of a billion-node lab is instant: the load quota reads no degrees (a fuzz input of
/// 510,001,000 nodes took over 10 s to plan when it did).
#[test]
fn the_load_quota_of_a_billion_nodes_is_a_bound_computed_at_once() {
    let s = Settings {
        maxid1: 1_000_000_000,
        loaders: 3,
        ..settings()
    };
    let bound = s.load_statement_bound();
    assert!(bound >= 1_000_000_000 / 3 * 100_000 / 1024, "{bound}");
    let load = s.step_plan(0, "linkbench.load", Kind::Load);
    assert_eq!(load.roles[0].quota, Some(bound));
}

/// The realised out-degree distribution: over 1,000,000 ids each bucket's share is
/// within 0.1 points of its configured share, and the mean out-degree is within 12% of
/// LinkBench's 4.10.
#[test]
fn out_degrees_follow_the_configured_distribution() {
    let n = 1_000_000u64;
    let mut hits = vec![0u64; DEGREES.len()];
    let mut sum = 0u64;
    for id in 1..=n {
        let d = degree(id);
        sum += u64::from(d);
        let b = DEGREES
            .iter()
            .position(|(hi, _)| d <= *hi)
            .expect("within the table");
        hits[b] += 1;
    }
    let mut prev = 0.0;
    for (i, (hi, cum)) in DEGREES.iter().enumerate() {
        let want = cum - prev;
        let got = hits[i] as f64 / n as f64;
        assert!(
            (got - want).abs() < 0.001,
            "degrees up to {hi}: share {got:.5}, configured {want:.5}"
        );
        prev = *cum;
    }
    let mean = sum as f64 / n as f64;
    assert!(
        (mean - 4.10).abs() / 4.10 < 0.12,
        "mean out-degree {mean:.2}"
    );
    // Each type's links add up to the node's.
    assert_eq!(type_links(5, 0) + type_links(5, 1), 5);
    assert_eq!((type_links(1, 0), type_links(1, 1)), (1, 0));
}

#[test]
fn mix_picks_every_operation_at_its_share() {
    let mut rng = SmallRng::seed_from_u64(7);
    let mut hits = [0u64; 10];
    let n = 200_000;
    for _ in 0..n {
        hits[Mix::Y2011.pick(rng.random::<f64>())] += 1;
    }
    for (i, p) in Mix::Y2011.0.iter().enumerate() {
        let got = 100.0 * hits[i] as f64 / n as f64;
        assert!((got - p).abs() < 0.3, "{}: {got:.2}% vs {p}%", OPS[i]);
    }
    let only = Mix([0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 100.0, 0.0, 0.0, 0.0]);
    assert_eq!(only.pick(0.999_999_9), 6);
    assert_eq!(only.pick(0.0), 6);
    assert!((Mix::UPDATED.0.iter().sum::<f64>() - 100.0).abs() < 0.01);
}

#[test]
fn id_draws_stay_in_range_and_favour_few_ids() {
    let mut rng = SmallRng::seed_from_u64(1);
    let draw = IdDraw::new(1_000, Some(ZIPF_LINK_READ));
    let mut hits = vec![0u32; 1_001];
    for _ in 0..100_000 {
        let id = draw.draw(&mut rng);
        assert!((1..=1_000).contains(&id));
        hits[id as usize] += 1;
    }
    hits.sort_unstable();
    let top: u32 = hits.iter().rev().take(10).sum();
    assert!(
        top > 10_000,
        "the 10 hottest of 1,000 ids get over 10% ({top})"
    );
    assert_ne!(
        hits.iter().rposition(|h| *h > 0),
        Some(1),
        "ranks are spread over the ids"
    );
}

#[test]
fn payloads_have_their_median_and_compress_by_their_share() {
    let mut rng = SmallRng::seed_from_u64(3);
    let mut lens: Vec<usize> = (0..1_001)
        .map(|_| payload_len(&mut rng, 168, usize::MAX))
        .collect();
    lens.sort_unstable();
    assert!((150..=186).contains(&lens[500]), "median {}", lens[500]);
    let mut out = Vec::new();
    payload(&mut rng, &mut out, 100, NODE_RANDOM);
    assert_eq!(out.len(), 100);
    assert!(out[63..].iter().all(|b| b"linkbench:".contains(b)));
}

#[test]
fn mismatches_name_their_keys() {
    let e = mismatch_error(&["7,123456789,3,2".to_string()]);
    assert!(
        e.message
            .contains("(id=7, link_type=123456789): count 3, visible links 2"),
        "{}",
        e.message
    );
}
