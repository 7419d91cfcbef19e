#!/bin/bash
sed -i -E 's/^#?Port .*/Port 2222/; s/^#?PermitRootLogin .*/PermitRootLogin no/; s/^#?PasswordAuthentication .*/PasswordAuthentication no/; s/^#?MaxAuthTries .*/MaxAuthTries 3/' /app/etc/ssh/sshd_config
echo 'AllowUsers deploy admin' >> /app/etc/ssh/sshd_config
