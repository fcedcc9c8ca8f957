//! The deployment (Containerfile, deploy/, docs/deploy.md) checked offline:
//!
//! - every manifest in deploy/ and every `yaml manifest` block of
//!   docs/deploy.md is valid against the `openAPIV3Schema` of the agent-sandbox
//!   CRD it names, with unknown fields refused as kubectl refuses them, and
//!   holds no YAML that Kubernetes reads otherwise than written;
//! - the validator refuses broken manifests (so the check can fail);
//! - the manifests agree with each other (claim → warm pool → template,
//!   mounts → volumes, probes → ports) and with the image (port, paths, user,
//!   the token file and its Secret) and the binary (the configuration file the
//!   image carries loads, and confines a command as the pod would);
//! - the Containerfile copies every file its build reads and runs as a
//!   numeric non-root user;
//! - the image's entry point, run here on loopback, serves MCP over HTTP with
//!   the token, answers /healthz without it, and runs a command sandboxed.
//!
//! No cluster is reached: none is available here. tests/image.rs builds the
//! image itself and runs its entry point.

mod cbuild;
mod common;
#[path = "common/http.rs"]
mod http;
mod k8s;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use common::{HANG_GUARD, TAG_VAR, TempDir, assert_no_survivors, unique_tag};
use k8s::containerfile::{Containerfile, Copy};
use k8s::{Crds, ambiguous_scalars, crd_dir, load_yaml};
use serde_json::{Value, json};

const BIN: &str = env!("CARGO_BIN_EXE_bash-mcp");
const DEADLINE: Duration = Duration::from_secs(120);
/// The path the server answers health checks on, without authentication.
const HEALTH_PATH: &str = "/healthz";

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn read(relative: &str) -> String {
    std::fs::read_to_string(root().join(relative)).unwrap_or_else(|e| panic!("{relative}: {e}"))
}

/// A manifest: where it comes from and what it says.
struct Manifest {
    origin: String,
    doc: Value,
}

/// The YAML files of deploy/.
fn deploy_files() -> Vec<String> {
    let mut files: Vec<String> = std::fs::read_dir(root().join("deploy"))
        .expect("deploy/")
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".yaml") || n.ends_with(".yml"))
        .map(|n| format!("deploy/{n}"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "deploy/ holds no manifest");
    files
}

/// The ```yaml manifest blocks of docs/deploy.md, with their first line.
fn doc_blocks() -> Vec<(usize, String)> {
    let text = read("docs/deploy.md");
    let mut blocks = Vec::new();
    let mut open: Option<(usize, String)> = None;
    for (i, line) in text.lines().enumerate() {
        let trimmed = line.trim_start();
        match &mut open {
            None if trimmed.starts_with("```yaml manifest") => open = Some((i + 1, String::new())),
            Some((start, body)) if trimmed == "```" => {
                blocks.push((*start, std::mem::take(body)));
                open = None;
            }
            Some((_, body)) => {
                body.push_str(line);
                body.push('\n');
            }
            None => {}
        }
    }
    blocks
}

/// Every YAML source checked: (origin, text).
fn sources() -> Vec<(String, String)> {
    let mut sources: Vec<(String, String)> = deploy_files().into_iter().map(|f| (f.clone(), read(&f))).collect();
    for (line, text) in doc_blocks() {
        sources.push((format!("docs/deploy.md:{line}"), text));
    }
    sources
}

fn manifests_of(sources: &[(String, String)]) -> Vec<Manifest> {
    let mut all = Vec::new();
    for (origin, text) in sources {
        let docs = load_yaml(text).unwrap_or_else(|e| panic!("{origin}: {e}"));
        for (i, doc) in docs.into_iter().enumerate() {
            all.push(Manifest {
                origin: if i == 0 {
                    origin.clone()
                } else {
                    format!("{origin} (document {})", i + 1)
                },
                doc,
            });
        }
    }
    all
}

/// The one manifest of `kind` in deploy/.
fn deployed(kind: &str) -> Value {
    let files: Vec<(String, String)> = deploy_files().into_iter().map(|f| (f.clone(), read(&f))).collect();
    let mut found: Vec<Value> = manifests_of(&files)
        .into_iter()
        .filter(|m| m.doc["kind"] == kind)
        .map(|m| m.doc)
        .collect();
    assert_eq!(found.len(), 1, "deploy/ must hold exactly one {kind}");
    found.remove(0)
}

/// The agent-sandbox CRDs, kept next to this repository (`../shared/third_party`)
/// in CI; a clone without them skips the schema checks and says so, and CI
/// (`CI` set, as `.ci/run` sets it) fails instead.
fn crds() -> Option<Crds> {
    let dir = crd_dir();
    if dir.is_dir() {
        return Some(Crds::load(&dir));
    }
    let why = "the agent-sandbox CRDs are not at ../shared/third_party/agent-sandbox-crds beside \
               this repository: copy k8s/crds/ of kubernetes-sigs/agent-sandbox (commit 2fd412d) \
               there to validate the manifests";
    assert!(std::env::var_os("CI").is_none(), "{why}");
    common::skip(why);
    None
}

#[test]
fn every_manifest_is_valid_against_its_crd() {
    let Some(crds) = crds() else { return };
    let manifests = manifests_of(&sources());
    let kinds: BTreeSet<String> = manifests
        .iter()
        .map(|m| m.doc["kind"].as_str().unwrap_or("").to_owned())
        .collect();
    for kind in ["SandboxTemplate", "SandboxWarmPool", "SandboxClaim"] {
        assert!(kinds.contains(kind), "no {kind} among the manifests (found {kinds:?})");
    }
    assert!(
        manifests.iter().any(|m| m.origin.starts_with("docs/")),
        "docs/deploy.md shows no ```yaml manifest block"
    );
    let mut failures = Vec::new();
    for m in &manifests {
        for error in crds.errors(&m.doc) {
            failures.push(format!("{}: {error}", m.origin));
        }
    }
    assert!(
        failures.is_empty(),
        "manifests the API server would refuse:\n{}",
        failures.join("\n")
    );
}

/// The check above must be able to fail: each of these breaks one rule of a
/// CRD (or of object metadata) in a copy of a shipped manifest, as a typo or
/// a wrong indentation would, and must be refused at the place it names.
#[test]
fn the_validator_refuses_what_the_api_server_would() {
    let Some(crds) = crds() else { return };
    let template = deployed("SandboxTemplate");
    let pool = deployed("SandboxWarmPool");
    let claim = deployed("SandboxClaim");
    type Break = fn(&mut Value);
    let cases: Vec<(&str, &Value, Break, &str)> = vec![
        (
            "a misspelt container field",
            &template,
            |t| t["spec"]["podTemplate"]["spec"]["containers"][0]["imagePulPolicy"] = json!("Always"),
            "/spec/podTemplate/spec/containers/0",
        ),
        (
            "a port written as a string",
            &template,
            |t| t["spec"]["podTemplate"]["spec"]["containers"][0]["ports"][0]["containerPort"] = json!("8080"),
            "/spec/podTemplate/spec/containers/0/ports/0/containerPort",
        ),
        (
            "a value outside an enum",
            &template,
            |t| t["spec"]["networkPolicyManagement"] = json!("Sometimes"),
            "/spec/networkPolicyManagement",
        ),
        (
            "a probe under the wrong parent",
            &template,
            |t| {
                t["spec"]["podTemplate"]["spec"]["readinessProbe"] =
                    json!({"httpGet": {"path": "/healthz", "port": 8080}})
            },
            "/spec/podTemplate/spec",
        ),
        (
            "a resource quantity that is not one",
            &template,
            |t| t["spec"]["podTemplate"]["spec"]["containers"][0]["resources"]["limits"]["memory"] = json!("two gigs"),
            "/spec/podTemplate/spec/containers/0/resources/limits/memory",
        ),
        (
            "a label value that is not a string",
            &template,
            |t| t["metadata"]["labels"]["enabled"] = json!(true),
            "/metadata/labels/enabled",
        ),
        (
            "a name that is not a DNS label",
            &claim,
            |c| c["metadata"]["name"] = json!("Agent_1"),
            "/metadata/name",
        ),
        (
            "a warm pool without its template",
            &pool,
            |p| {
                p["spec"].as_object_mut().unwrap().remove("sandboxTemplateRef");
            },
            "/spec",
        ),
        (
            "a negative replica count",
            &pool,
            |p| p["spec"]["replicas"] = json!(-1),
            "/spec/replicas",
        ),
        (
            "two volumes of one name",
            &template,
            |t| {
                let volumes = t["spec"]["podTemplate"]["spec"]["volumes"].as_array_mut().unwrap();
                let mut twin = volumes[1].clone();
                twin["emptyDir"] = json!({});
                volumes.push(twin);
            },
            "/spec/podTemplate/spec/volumes/4: the same name as /spec/podTemplate/spec/volumes/1",
        ),
        (
            "a claim of an unknown apiVersion",
            &claim,
            |c| c["apiVersion"] = json!("extensions.agents.x-k8s.io/v9"),
            "no CRD serves",
        ),
    ];
    for (what, original, break_it, expected_at) in cases {
        assert!(
            crds.errors(original).is_empty(),
            "the shipped manifest is valid to start with"
        );
        let mut broken = original.clone();
        break_it(&mut broken);
        let errors = crds.errors(&broken);
        assert!(
            errors
                .iter()
                .any(|e| e.starts_with(expected_at) || e.contains(expected_at)),
            "{what}: expected an error at {expected_at}, got {errors:#?}"
        );
    }
}

#[test]
fn manifests_hold_no_yaml_kubernetes_reads_otherwise() {
    let mut found = Vec::new();
    for (origin, text) in sources() {
        for (line, scalar) in ambiguous_scalars(&text) {
            found.push(format!("{origin}: line {}: {scalar}", line + 1));
        }
    }
    assert!(
        found.is_empty(),
        "plain scalars YAML 1.1 (Kubernetes' reader) reads otherwise than YAML 1.2; quote strings, write numbers in decimal:\n{}",
        found.join("\n")
    );
    // And the check sees them: an octal file mode and an unquoted `on`.
    let sample = "defaultMode: 0440\non: push\nname: \"on\"\nport: 8080\n";
    let seen: Vec<String> = ambiguous_scalars(sample).into_iter().map(|(_, s)| s).collect();
    assert_eq!(seen, ["0440", "on"]);
}

#[test]
fn the_claim_the_pool_and_the_template_name_each_other() {
    let template = deployed("SandboxTemplate");
    let pool = deployed("SandboxWarmPool");
    let claim = deployed("SandboxClaim");
    assert_eq!(
        pool["spec"]["sandboxTemplateRef"]["name"], template["metadata"]["name"],
        "the warm pool must name the template"
    );
    assert_eq!(
        claim["spec"]["warmPoolRef"]["name"], pool["metadata"]["name"],
        "the claim must name the warm pool"
    );
    assert!(
        pool["spec"]["replicas"].as_u64().is_some_and(|n| n > 0),
        "a warm pool of no pods warms nothing"
    );
    // The gateway reaches each sandbox through the headless Service the
    // controller makes for it.
    assert_eq!(
        template["spec"]["service"], true,
        "the template must ask for a Service per sandbox"
    );
}

/// The container of the template that runs the image.
fn container(template: &Value) -> &Value {
    let containers = template["spec"]["podTemplate"]["spec"]["containers"]
        .as_array()
        .unwrap();
    assert_eq!(containers.len(), 1, "one container: the server");
    &containers[0]
}

#[test]
fn every_mount_has_its_volume_and_every_probe_its_port() {
    let template = deployed("SandboxTemplate");
    let pod = &template["spec"]["podTemplate"]["spec"];
    let mut volumes: BTreeSet<String> = pod["volumes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["name"].as_str().unwrap().to_owned())
        .collect();
    for claim in template["spec"]["volumeClaimTemplates"].as_array().unwrap() {
        volumes.insert(claim["metadata"]["name"].as_str().unwrap().to_owned());
    }
    let c = container(&template);
    let mounted: BTreeSet<String> = c["volumeMounts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["name"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(mounted, volumes, "every volume mounted, every mount a volume");
    let ports: Vec<&Value> = c["ports"].as_array().unwrap().iter().collect();
    for probe in ["readinessProbe", "livenessProbe"] {
        let get = &c[probe]["httpGet"];
        assert_eq!(get["path"], HEALTH_PATH, "{probe} must ask {HEALTH_PATH}");
        let port = &get["port"];
        assert!(
            ports.iter().any(|p| &p["name"] == port || &p["containerPort"] == port),
            "{probe}'s port {port} is none of the container's ports"
        );
    }
    for limit in ["cpu", "memory", "ephemeral-storage"] {
        assert!(
            c["resources"]["limits"][limit].is_string(),
            "the container must have a {limit} limit: one agent's build must not starve the node"
        );
    }
}

/// The entry point's `serve` flags.
struct Entry {
    program: String,
    http: String,
    token_file: String,
    config: String,
}

impl Entry {
    fn of(containerfile: &Containerfile) -> Entry {
        let args = containerfile.entrypoint();
        assert_eq!(
            args.get(1).map(String::as_str),
            Some("serve"),
            "the entry point serves: {args:?}"
        );
        let flag = |name: &str| {
            let at = args
                .iter()
                .position(|a| a == name)
                .unwrap_or_else(|| panic!("the entry point has no {name}: {args:?}"));
            args[at + 1].clone()
        };
        Entry {
            program: args[0].clone(),
            http: flag("--http"),
            token_file: flag("--auth-token-file"),
            config: flag("--config"),
        }
    }

    fn port(&self) -> u16 {
        self.http.rsplit_once(':').unwrap().1.parse().expect("a port")
    }
}

fn containerfile() -> Containerfile {
    Containerfile::parse(&read("Containerfile"))
}

/// Where `path` is mounted in the container: the mount whose path is the
/// longest prefix of it.
fn mount_of<'a>(container: &'a Value, path: &str) -> Option<&'a Value> {
    container["volumeMounts"]
        .as_array()?
        .iter()
        .filter(|m| {
            let at = m["mountPath"].as_str().unwrap();
            path == at || path.starts_with(&format!("{}/", at.trim_end_matches('/')))
        })
        .max_by_key(|m| m["mountPath"].as_str().unwrap().len())
}

fn volume<'a>(template: &'a Value, name: &str) -> Option<&'a Value> {
    template["spec"]["podTemplate"]["spec"]["volumes"]
        .as_array()?
        .iter()
        .find(|v| v["name"] == name)
}

#[test]
fn the_template_runs_the_image_as_it_is_built() {
    let file = containerfile();
    let entry = Entry::of(&file);
    let template = deployed("SandboxTemplate");
    let c = container(&template);
    let pod = &template["spec"]["podTemplate"]["spec"];

    // The port: the entry point listens on every address of the pod, on the
    // port the container declares, the network policy opens and the image exposes.
    assert!(
        entry.http.starts_with("0.0.0.0:"),
        "in a pod the server listens on every address: {}",
        entry.http
    );
    let port = entry.port();
    assert!(
        c["ports"]
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p["containerPort"] == port),
        "the container does not declare the entry point's port {port}"
    );
    let ingress = template["spec"]["networkPolicy"]["ingress"]
        .as_array()
        .expect("ingress rules");
    assert!(!ingress.is_empty(), "an ingress rule for the gateway");
    for rule in ingress {
        assert_eq!(
            rule["ports"],
            json!([{"protocol": "TCP", "port": port}]),
            "ingress opens only the MCP port"
        );
        assert!(
            rule["from"].as_array().is_some_and(|f| !f.is_empty()),
            "ingress from named peers only, not from anywhere"
        );
    }
    let exposed = file.last("EXPOSE").expect("EXPOSE");
    assert_eq!(exposed.args, port.to_string(), "EXPOSE names the entry point's port");

    // The token: a file in a read-only Secret volume, the key mounted as the file's name.
    let token = Path::new(&entry.token_file);
    let mount = mount_of(c, &entry.token_file).expect("the token file's folder is mounted");
    assert_eq!(
        mount["mountPath"],
        token.parent().unwrap().to_str().unwrap(),
        "the Secret is mounted as the token's folder"
    );
    assert_eq!(mount["readOnly"], true, "the token is mounted read-only");
    let secret = &volume(&template, mount["name"].as_str().unwrap()).expect("the token volume")["secret"];
    let secret_name = secret["secretName"].as_str().expect("the token comes from a Secret");
    let item = &secret["items"][0];
    assert_eq!(
        item["path"],
        token.file_name().unwrap().to_str().unwrap(),
        "the Secret's item is the token file"
    );
    let key = item["key"].as_str().unwrap();
    let mode = secret["defaultMode"].as_u64().expect("a defaultMode");
    assert_eq!(mode & 0o007, 0, "the token is not readable by others (mode {mode:o})");
    // docs/deploy.md tells the operator to create that Secret with that key.
    let docs = read("docs/deploy.md");
    assert!(
        docs.contains(&format!("secret generic {secret_name}")) && docs.contains(&format!("--from-file={key}=")),
        "docs/deploy.md must show how to create the Secret {secret_name} with the key {key}"
    );

    // The user: the image's numeric user, never root, no way up.
    let user = file.last("USER").expect("USER").args.clone();
    let (uid, gid) = user.split_once(':').unwrap_or((&user, &user));
    let uid: u64 = uid
        .parse()
        .expect("USER is numeric, so Kubernetes can check runAsNonRoot");
    assert_ne!(uid, 0, "the image runs as root");
    let security = &pod["securityContext"];
    assert_eq!(security["runAsNonRoot"], true);
    assert_eq!(security["runAsUser"], uid, "runAsUser is the image's user");
    assert_eq!(
        security["runAsGroup"].to_string(),
        gid,
        "runAsGroup is the image's group"
    );
    assert_eq!(
        security["fsGroup"].to_string(),
        gid,
        "the volumes belong to the image's group"
    );
    assert_eq!(security["seccompProfile"]["type"], "RuntimeDefault");
    assert_eq!(c["securityContext"]["allowPrivilegeEscalation"], false);
    assert_eq!(c["securityContext"]["readOnlyRootFilesystem"], true);
    assert_eq!(c["securityContext"]["capabilities"]["drop"], json!(["ALL"]));
    assert_eq!(
        pod["automountServiceAccountToken"], false,
        "commands get no Kubernetes API token"
    );

    // The configuration the entry point names is the one the image copies in.
    let copies: Vec<Copy> = file.all("COPY").into_iter().map(Copy::parse).collect();
    let config_copy = copies
        .iter()
        .find(|c| c.dest == entry.config)
        .expect("the image copies the configuration the entry point names");
    assert_eq!(config_copy.sources, ["deploy/bash-mcp.toml"]);
    let binary_copy = copies
        .iter()
        .find(|c| c.dest == entry.program)
        .expect("the image copies the binary the entry point runs");
    assert_eq!(binary_copy.from.as_deref(), Some("build"));
    // The command and arguments are the image's: the template does not replace them.
    assert!(
        c.get("command").is_none() && c.get("args").is_none(),
        "the template keeps the image's entry point"
    );
    // The start-up probe runs one command through the image's binary and
    // configuration (the_image_configuration_confines_a_command runs it here).
    assert_eq!(
        c["startupProbe"]["exec"]["command"],
        json!([entry.program, "exec", "--config", entry.config, "true"]),
        "the start-up probe runs `true` in the configured sandbox"
    );
    // docs/deploy.md shows the entry point as it is.
    let args = file.entrypoint();
    let shown = format!("bash-mcp {}", args[1..].join(" "));
    assert!(
        docs.contains(&format!(
            "```text the image's entry point, checked by tests/deploy.rs\n{shown}\n```"
        )),
        "docs/deploy.md must show the entry point as the Containerfile has it: {shown}"
    );
    // The image's tag is the package's version.
    let manifest: toml::Table = read("Cargo.toml").parse().unwrap();
    let version = manifest["package"]["version"].as_str().unwrap();
    let image = c["image"].as_str().expect("an image");
    assert!(
        image.ends_with(&format!("/bash-mcp:{version}")),
        "the template's image {image} is not bash-mcp:{version}"
    );
    // The image's health check asks the same path on the same port.
    let health = file.last("HEALTHCHECK").expect("HEALTHCHECK").args.clone();
    assert!(
        health.contains(&format!("http://127.0.0.1:{port}{HEALTH_PATH}")),
        "HEALTHCHECK asks {HEALTH_PATH} on port {port}: {health}"
    );
}

/// The image's configuration file, parsed.
fn image_config() -> toml::Table {
    read("deploy/bash-mcp.toml")
        .parse()
        .expect("deploy/bash-mcp.toml is TOML")
}

/// The paths the configuration has the server or its commands write, or
/// work in.
fn written_paths(config: &toml::Table) -> Vec<String> {
    let mut paths = vec![
        config["working_dir"].as_str().expect("working_dir").to_owned(),
        config["audit"]["path"].as_str().expect("audit.path").to_owned(),
    ];
    for list in [&config["allowed_roots"], &config["sandbox"]["writable_roots"]] {
        paths.extend(
            list.as_array()
                .expect("a list")
                .iter()
                .map(|p| p.as_str().unwrap().to_owned()),
        );
    }
    paths
}

#[test]
fn the_configuration_agrees_with_the_pod() {
    let config = image_config();
    let template = deployed("SandboxTemplate");
    let c = container(&template);
    // The root filesystem is read-only: every path the server or a command
    // writes must lie on a volume, and the workspace on the claimed one.
    for path in &written_paths(&config) {
        let mount =
            mount_of(c, path).unwrap_or_else(|| panic!("{path} (deploy/bash-mcp.toml) lies on no volume of the pod"));
        assert_ne!(mount["readOnly"], true, "{path} lies on a read-only volume");
    }
    let workspace = config["working_dir"].as_str().expect("working_dir");
    let mount = mount_of(c, workspace).unwrap();
    let claimed: Vec<&str> = template["spec"]["volumeClaimTemplates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["metadata"]["name"].as_str().unwrap())
        .collect();
    assert!(
        claimed.contains(&mount["name"].as_str().unwrap()),
        "the workspace is the claimed volume"
    );
    // The audit log is kept apart from what commands may write.
    let audit = config["audit"]["path"].as_str().expect("audit.path");
    let sandbox = config["sandbox"].as_table().expect("[sandbox]");
    let roots: Vec<&str> = sandbox["writable_roots"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r.as_str().unwrap())
        .collect();
    for root in &roots {
        assert!(
            !Path::new(audit).starts_with(root),
            "the audit log {audit} lies inside the writable root {root}"
        );
    }
    assert_eq!(
        sandbox["on_unavailable"].as_str(),
        Some("fail"),
        "a pod whose sandbox cannot work must not run commands"
    );
    // The shell commands run in is the one the image installs.
    assert_eq!(
        config["shell"].as_str(),
        Some("/bin/bash"),
        "commands run in bash, which the image installs"
    );
    // Commands have no network, so the pod needs none either.
    if sandbox["network"].as_bool() == Some(false) {
        assert_eq!(
            template["spec"]["networkPolicy"]["egress"],
            json!([]),
            "with the sandbox's network off, the pod's egress stays closed"
        );
    }
}

/// The configuration with each of the pod's mount paths moved under `scratch`
/// (made as directories there), written as a JSON configuration file, which
/// the binary reads as it reads TOML; returns the file.
fn config_under(scratch: &Path) -> PathBuf {
    let template = deployed("SandboxTemplate");
    let mounts: Vec<String> = container(&template)["volumeMounts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["mountPath"].as_str().unwrap().to_owned())
        .collect();
    fn moved(value: &mut Value, mounts: &[String], scratch: &Path) {
        match value {
            Value::String(s) if mounts.iter().any(|m| s == m || s.starts_with(&format!("{m}/"))) => {
                *s = format!("{}{s}", scratch.display());
            }
            Value::Array(items) => items.iter_mut().for_each(|i| moved(i, mounts, scratch)),
            Value::Object(map) => map.values_mut().for_each(|v| moved(v, mounts, scratch)),
            _ => {}
        }
    }
    for m in &mounts {
        std::fs::create_dir_all(format!("{}{m}", scratch.display())).unwrap();
    }
    let mut config = serde_json::to_value(image_config()).unwrap();
    moved(&mut config, &mounts, scratch);
    let path = scratch.join("config.json");
    std::fs::write(&path, config.to_string()).unwrap();
    path
}

#[test]
fn the_image_configuration_loads_in_the_binary() {
    let scratch = TempDir::new("deploy-config");
    let config = config_under(&scratch);
    let tag = unique_tag("deploy-config");
    // `serve` over stdio loads the file, refusing an unknown key or a bad
    // value, and ends at the end of its input.
    let output = cbuild::run(
        Command::new(BIN)
            .arg("serve")
            .arg("--config")
            .arg(&config)
            .env(TAG_VAR, &tag),
        DEADLINE,
    );
    assert_no_survivors(&tag);
    assert!(
        output.status.success(),
        "bash-mcp refuses deploy/bash-mcp.toml:\n{}",
        cbuild::text(&output.stderr)
    );
}

/// The sandbox the configuration asks for, where this machine offers its
/// backend: a command writes in the workspace, and cannot write the audit
/// log's folder or the image's configuration, nor reach a server listening on
/// the host's loopback.
#[test]
fn the_image_configuration_confines_a_command() {
    let scratch = TempDir::new("deploy-sandbox");
    let config_path = config_under(&scratch);
    let config: Value = serde_json::from_str(&std::fs::read_to_string(&config_path).unwrap()).unwrap();
    // The probe runs in this test, not next to the binary as in the image: it
    // is told where the helper is.
    let mut probed = config["sandbox"].clone();
    probed["helper_path"] = json!(BIN);
    let sandbox = bash_mcp::sandbox::SandboxConfig::default()
        .apply(&probed, &scratch)
        .expect("the sandbox section as the library reads it");
    let backend = config["sandbox"]["backend"].as_str().unwrap_or("auto");
    if !common::sandbox_works(&sandbox, backend) {
        return;
    }
    // The start-up probe's command, with the configuration moved here.
    let template = deployed("SandboxTemplate");
    let probe: Vec<String> =
        serde_json::from_value(container(&template)["startupProbe"]["exec"]["command"].clone()).unwrap();
    let tag = unique_tag("deploy-probe");
    let config_arg = config_path.to_str().unwrap();
    let args: Vec<&str> = probe[1..]
        .iter()
        .map(|a| if a.starts_with("/etc/") { config_arg } else { a.as_str() })
        .collect();
    let output = cbuild::run(Command::new(BIN).args(&args).env(TAG_VAR, &tag), DEADLINE);
    assert_no_survivors(&tag);
    assert!(
        output.status.success(),
        "the start-up probe {args:?} fails:\n{}",
        cbuild::text(&output.stderr)
    );

    let workspace = Path::new(config["working_dir"].as_str().unwrap());
    let audit_dir = Path::new(config["audit"]["path"].as_str().unwrap())
        .parent()
        .unwrap()
        .to_owned();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let command = format!(
        "echo ok > made-here && cat made-here; \
         if {{ echo x > '{audit}/planted'; }} 2>/dev/null; then echo audit-writable; fi; \
         if {{ echo x > '{conf}.planted'; }} 2>/dev/null; then echo config-writable; fi; \
         if (exec 3<>/dev/tcp/127.0.0.1/{port}) 2>/dev/null; then echo network; fi; true",
        audit = audit_dir.display(),
        conf = config_path.display(),
    );
    let tag = unique_tag("deploy-sandbox");
    let result = common::sandboxes::exec_json(&config_path, workspace, &tag, &command);
    assert_no_survivors(&tag);
    assert_eq!(result["exit_code"], 0, "{result:#}");
    assert_eq!(
        result["output"].as_str().unwrap_or_default().trim(),
        "ok",
        "the command reached what the pod's sandbox must deny: {result:#}"
    );
    assert!(workspace.join("made-here").exists());
    assert!(!audit_dir.join("planted").exists());

    // The same command without the sandbox reaches all three: the checks
    // above can fail.
    let mut open = config.clone();
    open["sandbox"]["mode"] = json!("off");
    let open_path = scratch.join("unsandboxed.json");
    std::fs::write(&open_path, open.to_string()).unwrap();
    let tag = unique_tag("deploy-unsandboxed");
    let result = common::sandboxes::exec_json(&open_path, workspace, &tag, &command);
    assert_no_survivors(&tag);
    let lines: Vec<&str> = result["output"].as_str().unwrap_or_default().lines().collect();
    assert_eq!(
        lines,
        ["ok", "audit-writable", "config-writable", "network"],
        "{result:#}"
    );
    drop(listener);
}

/// What can be checked of the image without building it: every file the
/// build stage copies exists, the copies hold every file cargo reads to build
/// the binary (the manifest's declared tests and benchmarks, the data files the
/// sources embed), the Rust image is new enough for the crate, and the image
/// runs as a numeric user that is not root.
#[test]
fn the_containerfile_copies_what_the_build_reads() {
    let file = containerfile();
    let copies: Vec<Copy> = file.all("COPY").into_iter().map(Copy::parse).collect();
    let mut copied = Vec::new();
    for copy in copies.iter().filter(|c| c.from.is_none()) {
        for source in &copy.sources {
            assert!(
                root().join(source).exists(),
                "Containerfile:{}: COPY {source}: no such file in the build context",
                copy.line
            );
            copied.push(source.trim_end_matches('/').to_owned());
        }
    }
    let is_copied = |path: &str| copied.iter().any(|c| path == c || path.starts_with(&format!("{c}/")));
    for needed in ["Cargo.toml", "Cargo.lock", "build.rs"] {
        assert!(is_copied(needed), "the build stage does not copy {needed}");
    }
    let manifest: toml::Table = read("Cargo.toml").parse().unwrap();
    for (section, dir) in [("test", "tests"), ("bench", "benches")] {
        for target in manifest.get(section).and_then(|t| t.as_array()).into_iter().flatten() {
            let name = target["name"].as_str().unwrap();
            let path = target
                .get("path")
                .and_then(|p| p.as_str())
                .map(str::to_owned)
                .unwrap_or_else(|| format!("{dir}/{name}.rs"));
            assert!(
                is_copied(&path),
                "cargo reads the declared {section} {path}, which the build stage does not copy"
            );
        }
    }
    for embedded in embedded_files(&root().join("src")) {
        assert!(
            is_copied(&embedded),
            "the sources embed {embedded}, which the build stage does not copy"
        );
    }
    // Cargo takes exactly those files as a package, with Cargo.lock as it is:
    // every target the manifest declares is there, and --locked holds. Offline,
    // the graph is this platform's: the lock file also names crates only other
    // platforms build (wasm's), which a fresh machine has never downloaded.
    let stage = TempDir::new("deploy-build-stage");
    for copy in copies.iter().filter(|c| c.from.is_none() && c.dest.starts_with("./")) {
        for source in &copy.sources {
            let mirrored = copy.dest == "./" || copy.dest == format!("./{source}");
            assert!(
                mirrored,
                "Containerfile:{}: COPY {source} {}: the build stage mirrors the repository's layout",
                copy.line, copy.dest
            );
            let status = Command::new("cp")
                .arg("-a")
                .arg(root().join(source))
                .arg(stage.join(source))
                .status()
                .unwrap();
            assert!(status.success());
        }
    }
    let metadata = Command::new(env!("CARGO"))
        .args([
            "metadata",
            "--locked",
            "--offline",
            "--filter-platform",
            &host_triple(),
            "--format-version",
            "1",
            "--manifest-path",
        ])
        .arg(stage.join("Cargo.toml"))
        .output()
        .unwrap();
    assert!(
        metadata.status.success(),
        "cargo does not take the build stage's files as a package:\n{}",
        cbuild::text(&metadata.stderr)
    );
    // A .dockerignore keeps the multi-gigabyte target/ out of the build context.
    let ignore = read(".dockerignore");
    assert!(
        ignore.lines().any(|l| l.trim() == "target"),
        ".dockerignore must leave out target"
    );

    let wanted = manifest["package"]["rust-version"].as_str().unwrap();
    let image = file.arg_default("RUST_VERSION").expect("ARG RUST_VERSION");
    let version = |v: &str| -> Vec<u32> { v.split('.').map(|n| n.parse().unwrap()).collect() };
    assert!(
        version(&image) >= version(wanted)[..2].to_vec(),
        "the build image's Rust {image} is older than the crate's rust-version {wanted}"
    );
    let run = file
        .all("RUN")
        .iter()
        .map(|r| r.args.clone())
        .collect::<Vec<_>>()
        .join("\n");
    assert!(run.contains("--locked"), "the image builds from Cargo.lock (--locked)");
    assert!(run.contains("--features cli"), "the binary needs the cli feature");
    for package in ["bash", "bubblewrap"] {
        assert!(
            run.split_whitespace().any(|w| w == package),
            "the runtime stage installs {package}"
        );
    }
    let user = file.last("USER").expect("the image sets USER").args.clone();
    let uid = user.split(':').next().unwrap();
    assert!(
        uid.parse::<u32>().is_ok_and(|u| u != 0),
        "USER {user}: a numeric user other than root (Kubernetes checks runAsNonRoot only against a number)"
    );
}

/// The files `include_str!`/`include_bytes!` in `dir` embed, relative to the
/// crate root (the docs included only for doctests left out).
fn embedded_files(dir: &Path) -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            found.extend(embedded_files(&path));
            continue;
        }
        if path.extension().is_none_or(|x| x != "rs") {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        for macro_name in ["include_str!(\"", "include_bytes!(\""] {
            for piece in text.split(macro_name).skip(1) {
                let relative = piece.split('"').next().unwrap();
                if relative.ends_with(".md") {
                    continue;
                }
                let target = path.parent().unwrap().join(relative);
                let mut parts: Vec<String> = Vec::new();
                for c in target.strip_prefix(root()).unwrap().components() {
                    match c {
                        std::path::Component::ParentDir => {
                            parts.pop();
                        }
                        std::path::Component::Normal(p) => parts.push(p.to_string_lossy().into_owned()),
                        _ => {}
                    }
                }
                found.push(parts.join("/"));
            }
        }
    }
    found
}

/// The image's entry point, run here as the pod runs it but on loopback: its
/// flags are ones `bash-mcp serve` takes, `/healthz` answers without the
/// token, `/mcp` refuses a request without it and serves one with it, and a
/// command runs in the configured sandbox.
#[test]
fn the_entry_point_serves_the_workspace_over_http() {
    let entry = Entry::of(&containerfile());
    // Every flag of the entry point is one `bash-mcp serve --help` documents.
    let help = Command::new(BIN).args(["serve", "--help"]).output().unwrap();
    let help = cbuild::text(&help.stdout);
    for flag in containerfile().entrypoint().iter().filter(|a| a.starts_with("--")) {
        assert!(
            help.contains(&format!(" {flag} ")),
            "`bash-mcp serve --help` has no {flag}:\n{help}"
        );
    }
    let scratch = TempDir::new("deploy-http");
    let config = config_under(&scratch);
    let token_file = PathBuf::from(format!("{}{}", scratch.display(), entry.token_file));
    let token = format!("deploy-test-token-{}", std::process::id());
    std::fs::write(&token_file, format!("{token}\n")).unwrap();
    // The entry point's arguments after `serve --http ADDR`, with the image's
    // paths moved into the scratch directory.
    let args = containerfile().entrypoint();
    let mut rest: Vec<String> = Vec::new();
    let mut i = 2;
    while i < args.len() {
        match args[i].as_str() {
            "--http" => i += 1,
            "--auth-token-file" => {
                rest.extend(["--auth-token-file".to_owned(), token_file.display().to_string()]);
                i += 1;
            }
            "--config" => {
                rest.extend(["--config".to_owned(), config.display().to_string()]);
                i += 1;
            }
            other => rest.push(other.to_owned()),
        }
        i += 1;
    }
    let rest: Vec<&str> = rest.iter().map(String::as_str).collect();
    let tag = unique_tag("deploy-http");
    let server = http::HttpServe::start(
        BIN,
        "127.0.0.1:0",
        &rest,
        &[(TAG_VAR, &tag)],
        scratch.join("server.log"),
    );

    let health = server.request("GET", HEALTH_PATH, &[], b"");
    assert_eq!(health.status, 200, "{HEALTH_PATH} without a token: {health:?}");

    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "deploy-test", "version": "0"}}});
    let refused = server.post(&initialize, &[]);
    assert_eq!(refused.status, 401, "/mcp without the token: {refused:?}");

    let bearer = format!("Bearer {token}");
    let answer = server.post(&initialize, &[("Authorization", &bearer)]);
    assert_eq!(answer.status, 200, "{answer:?}\n{}", server.log());
    let session = answer.header("mcp-session-id").expect("a session").to_owned();
    let with_session = [
        ("Authorization", bearer.as_str()),
        ("Mcp-Session-Id", session.as_str()),
        ("MCP-Protocol-Version", "2025-11-25"),
    ];
    let initialized = server.post(
        &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        &with_session,
    );
    assert_eq!(initialized.status, 202, "{initialized:?}");
    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
        "name": "execute", "arguments": {"command": "echo ok > made-over-http && cat made-over-http"}}});
    let result = server.post(&call, &with_session).json();
    let document = &result["result"]["structuredContent"];
    let mut probed =
        serde_json::from_str::<Value>(&std::fs::read_to_string(&config).unwrap()).unwrap()["sandbox"].clone();
    probed["helper_path"] = json!(BIN);
    let sandbox = bash_mcp::sandbox::SandboxConfig::default()
        .apply(&probed, &scratch)
        .unwrap();
    if common::sandbox_works(&sandbox, "landlock") {
        assert_eq!(document["exit_code"], 0, "{result:#}");
        assert_eq!(document["output"].as_str().map(str::trim), Some("ok"), "{result:#}");
        assert_eq!(document["sandbox"]["backend"], "landlock", "{result:#}");
    } else {
        assert_eq!(document["error"]["code"], "sandbox_unavailable", "{result:#}");
    }
    server.stop();
    assert_no_survivors(&tag);
}

/// The target triple rustc builds for here (`x86_64-unknown-linux-gnu`).
fn host_triple() -> String {
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let output = Command::new(rustc).arg("-vV").output().unwrap();
    let text = cbuild::text(&output.stdout);
    text.lines()
        .find_map(|l| l.strip_prefix("host: "))
        .expect("rustc -vV names its host")
        .to_owned()
}
