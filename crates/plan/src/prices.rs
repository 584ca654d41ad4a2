//! The price table: radio models with capacity, price for both ends,
//! reach and channel width, read from CSV. What a model can and cannot do
//! for a pair (reach) is decided here.

use thiserror::Error;

/// One radio model (both ends of a link).
#[derive(Debug, Clone, PartialEq)]
pub struct Model {
    /// The model's name (unique in the table).
    pub name: String,
    /// Capacity in Mbit/s.
    pub capacity_mbps: f64,
    /// Price of both ends.
    pub price: f64,
    /// Longest link it makes, metres.
    pub reach_m: f64,
    /// Channel width in MHz.
    pub channel_mhz: u32,
}

/// Every model on sale.
#[derive(Debug, Clone, PartialEq)]
pub struct Catalogue {
    /// The models, in the file's order.
    pub models: Vec<Model>,
}

impl Catalogue {
    /// The model called `name`.
    pub fn model(&self, name: &str) -> Option<&Model> {
        self.models.iter().find(|m| m.name == name)
    }

    /// Indices of the models that reach `distance_m`.
    pub fn reaching(&self, distance_m: f64) -> Vec<usize> {
        (0..self.models.len())
            .filter(|&i| self.models[i].reach_m >= distance_m)
            .collect()
    }

    /// The longest reach of any model, metres.
    pub fn longest_reach_m(&self) -> f64 {
        self.models.iter().map(|m| m.reach_m).fold(0.0, f64::max)
    }
}

/// Why a price table is refused.
#[derive(Debug, Error, PartialEq)]
pub enum PriceError {
    /// The file is not CSV with the expected header.
    #[error("line {line}: {message}")]
    Malformed {
        /// 1-based line in the file.
        line: u64,
        /// What is wrong.
        message: String,
    },
    /// The table has no models.
    #[error("no models: the table needs a header and at least one row")]
    Empty,
}

const COLUMNS: [&str; 4] = ["model", "capacity_mbps", "price", "max_distance_km"];

/// Reads `model,capacity_mbps,price,max_distance_km[,channel_mhz]` with a
/// header row (columns in any order; channel_mhz defaults to 20).
pub fn parse_csv(text: &str) -> Result<Catalogue, PriceError> {
    let mut reader = csv::ReaderBuilder::new()
        .trim(csv::Trim::All)
        .comment(Some(b'#'))
        .from_reader(text.as_bytes());
    let header = reader
        .headers()
        .map_err(|e| PriceError::Malformed {
            line: 1,
            message: e.to_string(),
        })?
        .clone();
    let column = |name: &str| header.iter().position(|h| h == name);
    let mut at = [0usize; 4];
    for (slot, name) in at.iter_mut().zip(COLUMNS) {
        *slot = column(name).ok_or_else(|| PriceError::Malformed {
            line: 1,
            message: format!(
                "no column \"{name}\" (the header must name {} and may name channel_mhz)",
                COLUMNS.join(", ")
            ),
        })?;
    }
    let width_at = column("channel_mhz");
    let mut models: Vec<Model> = Vec::new();
    for record in reader.records() {
        let record = record.map_err(|e| PriceError::Malformed {
            line: e.position().map_or(0, |p| p.line()),
            message: e.to_string(),
        })?;
        let line = record.position().map_or(0, |p| p.line());
        let bad = |message: String| PriceError::Malformed { line, message };
        let field = |i: usize| record.get(i).unwrap_or("");
        let number = |i: usize, name: &str| -> Result<f64, PriceError> {
            field(i)
                .parse::<f64>()
                .ok()
                .filter(|x| x.is_finite())
                .ok_or_else(|| bad(format!("{name}: \"{}\" is not a number", field(i))))
        };
        let name = field(at[0]).to_string();
        if name.is_empty() {
            return Err(bad("model: empty name".into()));
        }
        if models.iter().any(|m| m.name == name) {
            return Err(bad(format!("model \"{name}\" is listed twice")));
        }
        let capacity_mbps = number(at[1], "capacity_mbps")?;
        if capacity_mbps <= 0.0 {
            return Err(bad(format!(
                "{name}: capacity_mbps {capacity_mbps} is not positive"
            )));
        }
        let price = number(at[2], "price")?;
        if price < 0.0 {
            return Err(bad(format!("{name}: price {price} is negative")));
        }
        let reach_km = number(at[3], "max_distance_km")?;
        if reach_km <= 0.0 {
            return Err(bad(format!(
                "{name}: max_distance_km {reach_km} is not positive"
            )));
        }
        let channel_mhz =
            match width_at.map(field) {
                None | Some("") => 20,
                Some(w) => w.parse::<u32>().ok().filter(|&w| w > 0).ok_or_else(|| {
                    bad(format!("{name}: channel_mhz \"{w}\" is not a width in MHz"))
                })?,
            };
        models.push(Model {
            name,
            capacity_mbps,
            price,
            reach_m: reach_km * 1000.0,
            channel_mhz,
        });
    }
    if models.is_empty() {
        return Err(PriceError::Empty);
    }
    Ok(Catalogue { models })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_table_is_read_in_any_column_order() {
        let c = parse_csv("price,model,capacity_mbps,max_distance_km\n# a comment\n199,\"Nano, 5AC\",450,15\n2400,AF-5XHD,1000,100\n").unwrap();
        assert_eq!(c.models.len(), 2);
        assert_eq!(c.models[0].name, "Nano, 5AC");
        assert_eq!(c.models[0].reach_m, 15_000.0);
        assert_eq!(c.models[1].channel_mhz, 20);
        assert_eq!(c.reaching(20_000.0), vec![1]);
        assert_eq!(c.longest_reach_m(), 100_000.0);
    }

    #[test]
    fn bad_tables_are_named_by_line() {
        let head = "model,capacity_mbps,price,max_distance_km,channel_mhz\n";
        let cases = [
            (
                format!("{head}a,100,-5,10,20\n"),
                "line 2: a: price -5 is negative",
            ),
            (
                format!("{head}a,100,5,10,20\nb,fast,5,10,20\n"),
                "line 3: capacity_mbps: \"fast\" is not a number",
            ),
            (
                format!("{head}a,100,5,10,20\na,100,5,10,20\n"),
                "listed twice",
            ),
            (
                format!("{head}a,100,5,0,20\n"),
                "max_distance_km 0 is not positive",
            ),
            (format!("{head}a,100,5,3,0\n"), "channel_mhz \"0\""),
            (
                "model,price\na,4\n".to_string(),
                "no column \"capacity_mbps\"",
            ),
            (head.to_string(), "no models"),
            (format!("{head}a,100,5\n"), "line 2"),
        ];
        for (text, want) in cases {
            let e = parse_csv(&text).unwrap_err().to_string();
            assert!(e.contains(want), "{e:?} should say {want:?}");
        }
    }
}
