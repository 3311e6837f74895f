"""`topictool report` and the LDAvis / dfr-browser exports: a model seen rather than read.

    compute.py   the figures every view shares: log p(w|k), log lift, relevance rankings
                 (Sievert & Shirley 2014), Jensen-Shannon divergences between topics and their
                 classical MDS (PCoA), term saliency (Chuang et al. 2012), the training tokens
    ldavis.py    pyLDAvis's prepared data (mdsDat, tinfo, token.table, ...) for `export ldavis`
    dfr.py       dfr-browser's data files for `export dfr-browser`
    svg.py       line charts as inline SVG (the training curves)
    page.py      the self-contained HTML report: the page's data as JSON, the topic table and
                 the curves rendered here, the page's own script and style (static/) inline

Nothing here imports a model family; a report needs a snapshot, and a run directory adds its
metrics and the training documents' topic counts.
"""
