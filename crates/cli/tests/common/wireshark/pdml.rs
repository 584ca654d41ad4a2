//! tshark's PDML (`-T pdml`) read into a tree of items: each packet's
//! protocols with their fields, as positions, sizes and shown values.

/// One `<proto>` or `<field>` of tshark's PDML, with its children.
#[derive(Debug, Default, Clone)]
pub struct Item {
    pub name: String,
    pub show: String,
    pub showname: String,
    pub value: String,
    pub pos: usize,
    pub size: usize,
    pub children: Vec<Item>,
}

/// A packet: its protocols, outermost first.
pub type Packet = Vec<Item>;

/// An attribute value with its XML entities replaced.
fn unescape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find('&') {
        out.push_str(&rest[..i]);
        let end = rest[i..].find(';').map(|e| i + e).expect("entity ends");
        let entity = &rest[i + 1..end];
        let c = match entity {
            "quot" => '"',
            "amp" => '&',
            "lt" => '<',
            "gt" => '>',
            "apos" => '\'',
            _ if entity.starts_with("#x") => {
                char::from_u32(u32::from_str_radix(&entity[2..], 16).unwrap()).unwrap()
            }
            _ if entity.starts_with('#') => char::from_u32(entity[1..].parse().unwrap()).unwrap(),
            _ => panic!("unknown entity &{entity};"),
        };
        out.push(c);
        rest = &rest[end + 1..];
    }
    out.push_str(rest);
    out
}

/// An element's attributes (tshark writes one element per line, values
/// in double quotes, quotes inside escaped).
fn element(line: &str) -> Item {
    let mut item = Item::default();
    let mut rest = line;
    while let Some(eq) = rest.find("=\"") {
        let key = rest[..eq].rsplit(' ').next().unwrap_or("");
        let after = &rest[eq + 2..];
        let close = after.find('"').expect("attribute value ends");
        let value = unescape(&after[..close]);
        match key {
            "name" => item.name = value,
            "show" => item.show = value,
            "showname" => item.showname = value,
            "value" => item.value = value,
            "pos" => item.pos = value.parse().unwrap(),
            "size" => item.size = value.parse().unwrap(),
            _ => {}
        }
        rest = &after[close + 1..];
    }
    item
}

/// The packets of tshark's PDML output.
pub fn parse_pdml(text: &str) -> Vec<Packet> {
    let mut packets = Vec::new();
    let mut protos: Vec<Item> = Vec::new();
    let mut open: Vec<Item> = Vec::new();
    fn attach(open: &mut [Item], protos: &mut Vec<Item>, item: Item) {
        match open.last_mut() {
            Some(parent) => parent.children.push(item),
            None => protos.push(item),
        }
    }
    for line in text.lines() {
        let l = line.trim();
        if l == "<packet>" {
            protos.clear();
        } else if l == "</packet>" {
            assert!(open.is_empty(), "unbalanced PDML");
            packets.push(std::mem::take(&mut protos));
        } else if l.starts_with("<proto ") || l.starts_with("<field ") {
            let item = element(l);
            if l.ends_with("/>") {
                attach(&mut open, &mut protos, item);
            } else {
                open.push(item);
            }
        } else if l == "</proto>" || l == "</field>" {
            let item = open.pop().expect("balanced PDML");
            attach(&mut open, &mut protos, item);
        }
    }
    packets
}

fn walk<'a>(item: &'a Item, out: &mut Vec<&'a Item>) {
    for c in &item.children {
        out.push(c);
        walk(c, out);
    }
}

/// Every item below `item`, depth first, in the order tshark wrote them.
pub fn descendants(item: &Item) -> Vec<&Item> {
    let mut out = Vec::new();
    walk(item, &mut out);
    out
}

/// The first item of `packet` named `name`, in any protocol.
pub fn field_value<'a>(packet: &'a Packet, name: &str) -> Option<&'a Item> {
    packet.iter().flat_map(descendants).find(|i| i.name == name)
}

/// Bytes as PDML shows them (a field's `value`): lower-case hex.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
