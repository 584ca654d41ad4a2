//! The examples in docs/planning.md are what braid plan reads: its NetJSON
//! example parses into the network it describes, and its price-table
//! example parses.

use braid_plan::design::Problem;
use braid_plan::network::{self, Role};
use braid_plan::prices;

/// The code blocks of a Markdown text whose fence names `lang` ("" for
/// none).
fn blocks(doc: &str, lang: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut open: Option<(String, String)> = None;
    for line in doc.lines() {
        match open.take() {
            None => {
                if let Some(l) = line.strip_prefix("```") {
                    open = Some((l.trim().to_string(), String::new()));
                }
            }
            Some((l, body)) if line.trim() == "```" => {
                if l == lang {
                    out.push(body);
                }
            }
            Some((l, mut body)) => {
                body.push_str(line);
                body.push('\n');
                open = Some((l, body));
            }
        }
    }
    out
}

#[test]
fn the_guides_examples_are_read_as_the_guide_says() {
    let doc = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../docs/planning.md"
    ))
    .expect("docs/planning.md");
    let json = blocks(&doc, "json");
    assert_eq!(json.len(), 1, "one NetJSON example");
    let net = network::parse(&json[0]).expect("the NetJSON example parses");
    assert_eq!(net.sites.len(), 3);
    assert_eq!(net.sites[net.gateway].id, "gw");
    assert_eq!(net.sites[2].role, Role::Edge);
    assert_eq!(net.max_links(1), Some(8));
    assert_eq!(net.pairs.len(), 3, "two links and one line-of-sight pair");
    assert_eq!(net.pairs[1].radios.len(), 2);
    assert_eq!(net.pairs[1].distance_m, 2300.0);
    assert!(net.pairs[0].distance_m > 1000.0, "from the coordinates");
    let table = blocks(&doc, "")
        .into_iter()
        .find(|b| b.starts_with("model,"))
        .expect("a price table example");
    let catalogue = prices::parse_csv(&table).expect("the price table example parses");
    assert_eq!(catalogue.models[0].channel_mhz, 40);
    // The two together make a problem: the example's radios are priced.
    Problem::new(&net, &catalogue, false).expect("the examples plan together");
}
