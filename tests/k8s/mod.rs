//! Kubernetes manifests read and validated offline, as an API server would
//! take them: YAML read the way `kubectl` reads it, each document checked
//! against the `openAPIV3Schema` of its CRD (the agent-sandbox CRDs in
//! `../shared/third_party/agent-sandbox-crds`) with unknown fields refused, as
//! kubectl's default strict field validation refuses them, and the keyed lists
//! (`x-kubernetes-list-type: map` or `set`) free of duplicates, as the API
//! server checks them.
#![allow(dead_code)]

pub mod containerfile;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value, json};
use yaml_rust2::parser::{Event, MarkedEventReceiver, Parser};
use yaml_rust2::scanner::{Marker, TScalarStyle};
use yaml_rust2::{Yaml, YamlLoader};

/// Where the CRDs are, beside the checkout.
pub fn crd_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/third_party/agent-sandbox-crds")
}

/// The documents of a YAML stream as JSON values (empty documents dropped).
pub fn load_yaml(text: &str) -> Result<Vec<Value>, String> {
    let docs = YamlLoader::load_from_str(text).map_err(|e| format!("not YAML: {e}"))?;
    docs.iter()
        .filter(|d| !matches!(d, Yaml::Null))
        .map(|d| to_json(d, ""))
        .collect()
}

fn to_json(yaml: &Yaml, at: &str) -> Result<Value, String> {
    Ok(match yaml {
        Yaml::Null => Value::Null,
        Yaml::Boolean(b) => Value::Bool(*b),
        Yaml::Integer(i) => json!(i),
        Yaml::Real(text) => {
            let f: f64 = text.parse().map_err(|_| format!("{at}: {text} is not a number"))?;
            json!(f)
        }
        Yaml::String(s) => Value::String(s.clone()),
        Yaml::Array(items) => Value::Array(
            items
                .iter()
                .enumerate()
                .map(|(i, item)| to_json(item, &format!("{at}/{i}")))
                .collect::<Result<_, _>>()?,
        ),
        Yaml::Hash(hash) => {
            let mut map = Map::new();
            for (key, value) in hash {
                let Yaml::String(key) = key else {
                    return Err(format!("{at}: the key {key:?} is not a string"));
                };
                map.insert(key.clone(), to_json(value, &format!("{at}/{key}"))?);
            }
            Value::Object(map)
        }
        Yaml::Alias(_) => return Err(format!("{at}: YAML aliases are not used in manifests")),
        Yaml::BadValue => return Err(format!("{at}: a value YAML could not read")),
    })
}

/// Plain (unquoted) scalars that YAML 1.1, which Kubernetes' YAML reader
/// follows, reads otherwise than YAML 1.2: `0440` is the octal 288 there and
/// 440 here, `on`/`yes`/`no` are booleans there and strings here, `1:30` a
/// number there. Returns each with its line; quote strings, write numbers in
/// decimal.
pub fn ambiguous_scalars(text: &str) -> Vec<(usize, String)> {
    struct Plain(Vec<(usize, String)>);
    impl MarkedEventReceiver for Plain {
        fn on_event(&mut self, event: Event, mark: Marker) {
            if let Event::Scalar(value, TScalarStyle::Plain, _, None) = event
                && reads_otherwise_in_yaml_1_1(&value)
            {
                self.0.push((mark.line(), value));
            }
        }
    }
    let mut found = Plain(Vec::new());
    let mut parser = Parser::new_from_str(text);
    if parser.load(&mut found, true).is_err() {
        return found.0;
    }
    found.0
}

fn reads_otherwise_in_yaml_1_1(plain: &str) -> bool {
    const BOOLEANS: &[&str] = &[
        "y", "Y", "yes", "Yes", "YES", "n", "N", "no", "No", "NO", "on", "On", "ON", "off", "Off", "OFF",
    ];
    let unsigned = plain.trim_start_matches(['+', '-']);
    let digits = |s: &str, radix: u32| !s.is_empty() && s.chars().all(|c| c == '_' || c.is_digit(radix));
    let octal = unsigned.len() > 1 && unsigned.starts_with('0') && digits(&unsigned[1..], 8);
    let binary = unsigned.strip_prefix("0b").is_some_and(|b| digits(b, 2));
    let sexagesimal = unsigned.contains(':')
        && unsigned
            .split(':')
            .all(|part| digits(part.split('.').next().unwrap_or(""), 10));
    BOOLEANS.contains(&plain) || octal || binary || sexagesimal || plain == "="
}

/// The schema of every served version of every CRD in a directory, keyed by
/// (`apiVersion`, `kind`), made strict.
pub struct Crds {
    /// The validator, and the schema for what JSON Schema cannot say.
    schemas: BTreeMap<(String, String), (jsonschema::Validator, Value)>,
}

impl Crds {
    pub fn load(dir: &Path) -> Crds {
        let mut schemas = BTreeMap::new();
        let mut entries: Vec<_> = std::fs::read_dir(dir)
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
            .collect();
        entries.sort();
        for path in entries {
            let text = std::fs::read_to_string(&path).unwrap();
            for doc in load_yaml(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display())) {
                if doc["kind"] != "CustomResourceDefinition" {
                    continue;
                }
                let group = doc["spec"]["group"].as_str().expect("spec.group");
                let kind = doc["spec"]["names"]["kind"].as_str().expect("spec.names.kind");
                for version in doc["spec"]["versions"].as_array().expect("spec.versions") {
                    if version["served"] != true {
                        continue;
                    }
                    let name = version["name"].as_str().expect("version name");
                    let mut schema = version["schema"]["openAPIV3Schema"].clone();
                    assert!(
                        schema.is_object(),
                        "{}: {kind} {name} has no openAPIV3Schema",
                        path.display()
                    );
                    make_strict(&mut schema);
                    let lists = schema.clone();
                    schema["properties"]["metadata"] = object_meta();
                    schema["required"] = json!(["apiVersion", "kind", "metadata", "spec"]);
                    let validator = jsonschema::draft4::new(&schema).unwrap_or_else(|e| {
                        panic!("{}: {kind} {name}: the schema does not compile: {e}", path.display())
                    });
                    schemas.insert((format!("{group}/{name}"), kind.to_owned()), (validator, lists));
                }
            }
        }
        Crds { schemas }
    }

    /// The kinds this set knows, as `apiVersion kind`.
    pub fn kinds(&self) -> Vec<String> {
        self.schemas.keys().map(|(v, k)| format!("{v} {k}")).collect()
    }

    /// What is wrong with `doc`, one line per error (empty: valid).
    pub fn errors(&self, doc: &Value) -> Vec<String> {
        let api = doc["apiVersion"].as_str().unwrap_or("");
        let kind = doc["kind"].as_str().unwrap_or("");
        let Some(validator) = self.schemas.get(&(api.to_owned(), kind.to_owned())) else {
            return vec![format!(
                "no CRD serves apiVersion {api:?} kind {kind:?} (known: {})",
                self.kinds().join(", ")
            )];
        };
        let (validator, schema) = validator;
        let mut errors: Vec<String> = validator
            .iter_errors(doc)
            .map(|e| format!("{}: {e}", pointer_or_root(&e.instance_path().to_string())))
            .collect();
        duplicate_keys(schema, doc, "", &mut errors);
        errors
    }
}

fn pointer_or_root(pointer: &str) -> String {
    if pointer.is_empty() {
        "/".to_owned()
    } else {
        pointer.to_owned()
    }
}

/// An API server prunes or (with kubectl's default strict field validation)
/// refuses fields a structural schema does not declare; JSON Schema accepts
/// them unless `additionalProperties` says otherwise. So every object schema
/// that lists its properties, and does not keep unknown fields, gets
/// `additionalProperties: false`.
fn make_strict(schema: &mut Value) {
    match schema {
        Value::Object(map) => {
            let keeps_unknown = map.get("x-kubernetes-preserve-unknown-fields") == Some(&Value::Bool(true));
            if map.contains_key("properties") && !map.contains_key("additionalProperties") && !keeps_unknown {
                map.insert("additionalProperties".into(), Value::Bool(false));
            }
            for value in map.values_mut() {
                make_strict(value);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(make_strict),
        _ => {}
    }
}

/// What the API server checks of `metadata` itself (a CRD's schema says only
/// `type: object`): a name that is a DNS label (the controller names pods and
/// Services after it), string labels and annotations, nothing unknown.
fn object_meta() -> Value {
    let dns_label = json!({"type": "string", "maxLength": 63, "pattern": "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"});
    let strings = json!({"type": "object", "additionalProperties": {"type": "string"}});
    json!({
        "type": "object",
        "properties": {
            "name": dns_label,
            "namespace": dns_label,
            "labels": strings,
            "annotations": strings,
        },
        "required": ["name"],
        "additionalProperties": false,
    })
}

/// What the API server checks beyond JSON Schema in a list whose schema says
/// `x-kubernetes-list-type: map` (no two items with the same keys: two
/// volumes, ports or variables of one name) or `set` (no two equal items).
fn duplicate_keys(schema: &Value, value: &Value, at: &str, errors: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            for (key, item) in map {
                let field = schema["properties"]
                    .get(key)
                    .or_else(|| schema.get("additionalProperties").filter(|a| a.is_object()));
                if let Some(field) = field {
                    duplicate_keys(field, item, &format!("{at}/{key}"), errors);
                }
            }
        }
        Value::Array(items) => {
            let keys: Vec<&str> = schema["x-kubernetes-list-map-keys"]
                .as_array()
                .map(|k| k.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            let identity = |item: &Value| -> Value {
                match schema["x-kubernetes-list-type"].as_str() {
                    Some("map") => Value::Array(keys.iter().map(|k| item[*k].clone()).collect()),
                    _ => item.clone(),
                }
            };
            if matches!(schema["x-kubernetes-list-type"].as_str(), Some("map" | "set")) {
                for (i, item) in items.iter().enumerate() {
                    if let Some(first) = items[..i]
                        .iter()
                        .position(|earlier| identity(earlier) == identity(item))
                    {
                        errors.push(format!(
                            "{at}/{i}: the same {} as {at}/{first}: {}",
                            if keys.is_empty() {
                                "item".to_owned()
                            } else {
                                keys.join(", ")
                            },
                            identity(item)
                        ));
                    }
                }
            }
            for (i, item) in items.iter().enumerate() {
                duplicate_keys(&schema["items"], item, &format!("{at}/{i}"), errors);
            }
        }
        _ => {}
    }
}
