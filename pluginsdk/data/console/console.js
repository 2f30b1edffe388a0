// pluginsdk console: the only script. Live regions poll their fragment URL until it says it is final.
"use strict";
(function () {
  function poll(section) {
    var url = section.getAttribute("data-poll");
    if (!url || section.querySelector("[data-final]")) return;
    window.setTimeout(function () {
      fetch(url, { credentials: "same-origin", headers: { "Accept": "text/html" } })
        .then(function (r) { return r.ok ? r.text() : null; })
        .then(function (html) {
          if (html === null) return;
          var doc = new DOMParser().parseFromString(html, "text/html");
          section.replaceChildren.apply(section, Array.prototype.slice.call(doc.body.childNodes));
          poll(section);
        })
        .catch(function () { poll(section); });
    }, 500);
  }
  document.addEventListener("DOMContentLoaded", function () {
    document.querySelectorAll("[data-poll]").forEach(poll);
  });
})();
// The constraint editor: the field suggestions follow the chosen object type (its data-fields).
document.addEventListener("DOMContentLoaded", function () {
  var types = document.getElementById("f-object_type");
  var names = document.getElementById("field-names");
  if (!types || !names) return;
  types.addEventListener("change", function () {
    var chosen = types.options[types.selectedIndex];
    var fields = (chosen.getAttribute("data-fields") || "").split(" ").filter(Boolean);
    names.replaceChildren.apply(names, fields.map(function (f) {
      var option = document.createElement("option");
      option.value = f;
      return option;
    }));
  });
});
