//! The generated items: pushing, reserving and filling their slots, their
//! names, and what the module's aliases and nullable items resolve to.

use serde_json::{Map, Value};

use crate::doc::DocText;
use crate::types::model::{ItemDef, Ty};
use crate::types::names::pascal;

use super::{Converter, Hint};

impl Converter {
    pub(super) fn push_item(&mut self, item: ItemDef) {
        let name = item_name(&item).to_string();
        self.item_index.insert(name, self.items.len());
        self.items.push(Some(item));
    }

    /// Pushes `item` and names it.
    pub(super) fn push_named(&mut self, item: ItemDef) -> Ty {
        let name = item_name(&item).to_string();
        self.push_item(item);
        Ty::Named(name)
    }

    /// Picks the name of an item that may refer to itself (a recursive
    /// struct or union) and reserves its slot, filled by [`Self::fill_slot`]
    /// once its parts are converted.
    pub(super) fn reserve_named(&mut self, hint: &Hint, s: &Map<String, Value>) -> (String, usize) {
        let name = self.take_name(hint, Some(s));
        let slot = self.items.len();
        self.items.push(None);
        self.item_index.insert(name.clone(), slot);
        (name, slot)
    }

    /// Fills the slot [`Self::reserve_named`] reserved.
    pub(super) fn fill_slot(&mut self, slot: usize, item: ItemDef) -> Ty {
        let name = item_name(&item).to_string();
        self.items[slot] = Some(item);
        Ty::Named(name)
    }

    /// Follows aliases.
    pub(super) fn resolve(&self, ty: &Ty) -> Ty {
        let mut ty = ty.clone();
        for _ in 0..32 {
            match &ty {
                Ty::Named(n) => match self.aliases.get(n) {
                    Some(target) => ty = target.clone(),
                    None => return ty,
                },
                _ => return ty,
            }
        }
        ty
    }

    /// [`Ty::is_integers`], seeing through this module's aliases.
    pub(super) fn is_integers(&self, ty: &Ty) -> bool {
        ty.is_integers(&|t| self.resolve(t))
    }

    pub(super) fn admits_null(&self, ty: &Ty) -> bool {
        match self.resolve(ty) {
            Ty::Value | Ty::Unit | Ty::Option(_) => true,
            Ty::Boxed(inner) => self.admits_null(&inner),
            Ty::Named(n) => self.null_admitting.contains(&n),
            _ => false,
        }
    }

    pub(super) fn nullable(&self, ty: Ty) -> Ty {
        if self.admits_null(&ty) {
            ty
        } else {
            Ty::Option(Box::new(ty))
        }
    }

    /// `ty`, made nullable when the schema also admits `null`.
    pub(super) fn nullable_if(&self, nullable: bool, ty: Ty) -> Ty {
        if nullable {
            self.nullable(ty)
        } else {
            ty
        }
    }

    /// Picks the name for a type item: the exact name, or a fresh one from
    /// the schema's `title` or the hint.
    pub(super) fn take_name(&mut self, hint: &Hint, s: Option<&Map<String, Value>>) -> String {
        match hint {
            Hint::Exact(name) => name.clone(),
            Hint::Fresh(base) => {
                let title = s.and_then(|s| s.get("title")).and_then(Value::as_str);
                let base = match title {
                    Some(title) => self.role_prefixed(&pascal(title)),
                    None => base.clone(),
                };
                self.names.unique(&base, false)
            }
        }
    }

    pub(super) fn role_prefixed(&self, name: &str) -> String {
        if name.starts_with(self.role) {
            name.to_string()
        } else {
            format!("{}{}", self.role, name)
        }
    }
}

pub(super) fn item_doc_mut(item: &mut ItemDef) -> &mut Vec<DocText> {
    match item {
        ItemDef::Struct { doc, .. }
        | ItemDef::Newtype { doc, .. }
        | ItemDef::Alias { doc, .. }
        | ItemDef::StringEnum { doc, .. }
        | ItemDef::Untagged { doc, .. }
        | ItemDef::Tagged { doc, .. }
        | ItemDef::OpenEnum { doc, .. }
        | ItemDef::Const { doc, .. } => doc,
    }
}

fn item_name(item: &ItemDef) -> &str {
    match item {
        ItemDef::Struct { name, .. }
        | ItemDef::Newtype { name, .. }
        | ItemDef::Alias { name, .. }
        | ItemDef::StringEnum { name, .. }
        | ItemDef::Untagged { name, .. }
        | ItemDef::Tagged { name, .. }
        | ItemDef::OpenEnum { name, .. }
        | ItemDef::Const { name, .. } => name,
    }
}
