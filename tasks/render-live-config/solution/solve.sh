#!/bin/bash
cd /app
. env/prod.env
cp live/app.conf backup/app.conf.bak
sed "s/@PORT@/$PORT/" templates/app.conf.tmpl > /tmp/a.conf
sed "s/@HOST@/$HOST/" /tmp/a.conf > /tmp/b.conf
cp /tmp/b.conf live/app.conf
sha256sum live/app.conf > live/app.sum
