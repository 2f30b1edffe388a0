// pluginsdk console: the only script. A live region follows its server-sent events (data-events) and falls
// back to polling its fragment URL (data-poll) where the stream fails, until the fragment says it is final.
"use strict";
(function () {
  function show(section, html) {
    var doc = new DOMParser().parseFromString(html, "text/html");
    section.replaceChildren.apply(section, Array.prototype.slice.call(doc.body.childNodes));
  }
  function poll(section) {
    var url = section.getAttribute("data-poll");
    if (!url || section.querySelector("[data-final]")) return;
    section.setAttribute("data-live", "poll");
    window.setTimeout(function () {
      fetch(url, { credentials: "same-origin", headers: { "Accept": "text/html" } })
        .then(function (r) { return r.ok ? r.text() : null; })
        .then(function (html) {
          if (html === null) return;
          show(section, html);
          poll(section);
        })
        .catch(function () { poll(section); });
    }, 500);
  }
  function follow(section) {
    var url = section.getAttribute("data-events");
    if (!url || !window.EventSource || section.querySelector("[data-final]")) return poll(section);
    var source = new EventSource(url);
    source.addEventListener("open", function () { section.setAttribute("data-live", "events"); });
    source.addEventListener("progress", function (e) { show(section, e.data); });
    source.addEventListener("final", function (e) { source.close(); show(section, e.data); });
    source.addEventListener("error", function () {
      if (source.readyState === EventSource.CLOSED) poll(section);
    });
  }
  document.addEventListener("DOMContentLoaded", function () {
    document.querySelectorAll("[data-events], [data-poll]").forEach(follow);
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
