//! What a permission or ownership change does to a home directory, read from `chmod`,
//! `chown`/`chgrp` and `setfacl` arguments.
//!
//! A change is harmful when it locks the owner out (`chmod 000 ~`, `chmod -R a-x ~`),
//! lets others write (`chmod 777 ~`, `setfacl -m u:bob:rwx ~`), exposes every file to
//! others (`chmod -R 755 ~`: private keys readable), or gives the files to a system
//! account (`chown -R nobody ~`). Adding the owner's own rights (`chmod -R u+w ~`),
//! removing others' (`chmod -R go-rwx ~`) or giving the files to a user
//! (`chown -R me ~`) is not.

use super::rules::in_set;

/// Option letters of chmod, chown, chgrp and setfacl that take no value.
const FLAGS: &str = "RcfvhHLPdbkn";

/// Whether the word `arg` is a bundle of flags (`-R`, `-Rv`) rather than an operand or
/// a chmod mode such as `-w`.
fn is_flags(arg: &str) -> bool {
    arg.strip_prefix('-')
        .is_some_and(|f| !f.is_empty() && !f.starts_with('-') && f.chars().all(|c| FLAGS.contains(c)))
}

/// Whether the arguments ask for a recursive change.
pub(super) fn recursive(args: &[String]) -> bool {
    args.iter()
        .any(|a| a == "--recursive" || is_flags(a) && a.contains('R'))
}

/// The first operand of chmod/chown/chgrp (the mode or owner), `None` when it comes
/// from `--reference` (not known) or is missing.
fn first_operand(args: &[String]) -> Option<&str> {
    let mut words = args.iter();
    while let Some(a) = words.next() {
        if a.starts_with("--reference") {
            return None;
        }
        if a == "--" {
            return words.next().map(String::as_str);
        }
        if a.starts_with("--") || is_flags(a) {
            continue;
        }
        return Some(a);
    }
    None
}

/// `chmod` with `args` (without the command word) harms a home directory.
pub(super) fn mode_harms(args: &[String]) -> bool {
    let deep = recursive(args);
    let Some(mode) = first_operand(args) else {
        return true;
    };
    if !mode.is_empty() && mode.chars().all(|c| c.is_ascii_digit()) {
        return numeric_harms(mode, deep);
    }
    mode.split(',').any(|clause| clause_harms(clause, deep))
}

/// An octal mode harms unless the owner keeps `rwx` and others get no write (and, for a
/// tree, no read: every file would be readable).
fn numeric_harms(mode: &str, deep: bool) -> bool {
    let Ok(bits) = u32::from_str_radix(mode, 8) else {
        return true;
    };
    let owner = (bits >> 6) & 7;
    let others = [(bits >> 3) & 7, bits & 7];
    owner != 7 || others.iter().any(|&d| d & 2 != 0 || deep && d & 4 != 0)
}

/// One symbolic clause (`u+w`, `go-rwx`, `a=r`, `+x`, `o=u`) harms when it takes
/// reading, writing or searching from the owner, or gives others write (or, for a
/// tree, read).
fn clause_harms(clause: &str, deep: bool) -> bool {
    let who_end = clause.find(|c: char| !"ugoa".contains(c)).unwrap_or(clause.len());
    let who = &clause[..who_end];
    let all = who.is_empty() || who.contains('a');
    let owner = all || who.contains('u');
    let others = all || who.contains('g') || who.contains('o');
    let mut rest = &clause[who_end..];
    if rest.is_empty() {
        return true;
    }
    while let Some(op) = rest.chars().next() {
        if !"+-=".contains(op) {
            // Not a mode chmod reads: judged harmful.
            return true;
        }
        let end = rest[1..].find(['+', '-', '=']).map_or(rest.len(), |k| k + 1);
        let perms = &rest[1..end];
        rest = &rest[end..];
        // `g=u`: others get the owner's rights, which include reading and writing.
        let copies = perms.chars().any(|c| "ugo".contains(c));
        let gives = |p: char| copies || perms.contains(p);
        let essential = perms.contains(['r', 'w', 'x', 'X']) || copies;
        let harm = match op {
            '-' => owner && essential,
            '+' => others && (gives('w') || deep && gives('r')),
            _ => {
                let owner_loses = owner && !(copies || perms.contains('r') && perms.contains('w'));
                owner_loses || others && (gives('w') || deep && gives('r'))
            }
        };
        if harm {
            return true;
        }
    }
    false
}

/// `chown`/`chgrp` with `args` gives the files to a system account (`root`, `nobody`,
/// a user or group id below 1000), or to an owner the text does not say.
pub(super) fn owner_is_system_account(command: &str, args: &[String]) -> bool {
    let Some(spec) = first_operand(args) else {
        return true;
    };
    let names: Vec<&str> = if command == "chgrp" {
        vec![spec]
    } else {
        spec.split([':', '.']).filter(|n| !n.is_empty()).collect()
    };
    names
        .iter()
        .any(|n| in_set("system-accounts", n, false) || n.parse::<u32>().is_ok_and(|id| id < 1000 || id == 65534))
}

/// `setfacl` with `args` grants another user or group write (or, for a tree, read),
/// takes reading or writing from the owner, or applies entries from a file.
pub(super) fn acl_harms(args: &[String]) -> bool {
    let deep = recursive(args);
    let mut words = args.iter();
    while let Some(a) = words.next() {
        let (option, attached) = match a.split_once('=') {
            Some((o, v)) if o.starts_with("--") => (o, Some(v.to_owned())),
            _ => (a.as_str(), None),
        };
        match option {
            "-m" | "--modify" | "-s" | "--set" => {
                let Some(spec) = attached.or_else(|| words.next().cloned()) else {
                    return true;
                };
                if spec.split(',').any(|e| entry_harms(e, deep)) {
                    return true;
                }
            }
            // Entries from a file, or a whole saved set: not known.
            "-M" | "--modify-file" | "-S" | "--set-file" | "--restore" => return true,
            _ => {
                if let Some(spec) = a.strip_prefix("-m").filter(|s| !s.is_empty())
                    && spec.split(',').any(|e| entry_harms(e, deep))
                {
                    return true;
                }
            }
        }
    }
    false
}

/// One ACL entry (`u:bob:rwx`, `d:g::rx`, `o::r`, `u::r`).
fn entry_harms(entry: &str, deep: bool) -> bool {
    let entry = entry
        .strip_prefix("d:")
        .or_else(|| entry.strip_prefix("default:"))
        .unwrap_or(entry);
    let fields: Vec<&str> = entry.split(':').collect();
    let (kind, qualifier, perms) = match fields.as_slice() {
        [k, q, p] => (*k, *q, *p),
        [k, p] => (*k, "", *p),
        _ => return true,
    };
    let owner = matches!(kind, "u" | "user") && qualifier.is_empty();
    let numeric = perms.chars().all(|c| c.is_ascii_digit());
    let (read, write) = if numeric {
        let d = perms.parse::<u32>().unwrap_or(7);
        (d & 4 != 0, d & 2 != 0)
    } else {
        (perms.contains('r'), perms.contains('w'))
    };
    if owner {
        !(read && write)
    } else if matches!(kind, "m" | "mask") {
        false
    } else {
        write || deep && read
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(text: &str) -> Vec<String> {
        text.split(' ').map(str::to_owned).collect()
    }

    #[test]
    fn modes_that_lock_out_or_expose() {
        for harmful in [
            "-R 000 ~",
            "777 ~",
            "-R 755 ~",
            "000 ~",
            "-R a-x ~",
            "u-w ~",
            "-R o+w ~",
            "-R a+r ~",
            "a=r ~",
            "o=u ~",
            "--reference=x ~",
            "-R 666 ~",
        ] {
            assert!(mode_harms(&words(harmful)), "{harmful}");
        }
        for fine in [
            "-R u+w ~",
            "-R u+rwX ~",
            "-R go-rwx ~",
            "755 ~",
            "700 ~",
            "-R 700 ~",
            "go-w ~",
            "-R +X ~",
            "u=rwx ~",
        ] {
            assert!(!mode_harms(&words(fine)), "{fine}");
        }
    }

    #[test]
    fn owners_that_are_system_accounts() {
        assert!(owner_is_system_account("chown", &words("-R nobody ~")));
        assert!(owner_is_system_account("chown", &words("-R root:root ~")));
        assert!(owner_is_system_account("chown", &words("-R 0 ~")));
        assert!(owner_is_system_account("chgrp", &words("-R nogroup ~")));
        assert!(!owner_is_system_account("chown", &words("-R me ~")));
        assert!(!owner_is_system_account("chown", &words("-R $USER:$USER ~")));
        assert!(!owner_is_system_account("chown", &words("-R 1000:1000 ~")));
    }

    #[test]
    fn acls_that_grant_write_or_lock_out() {
        assert!(acl_harms(&words("-R -m u:bob:rwx ~")));
        assert!(acl_harms(&words("-m o::rw ~")));
        assert!(acl_harms(&words("-m u::r ~")));
        assert!(!acl_harms(&words("-m u:bob:rx ~")));
        assert!(!acl_harms(&words("-b ~")));
    }
}
